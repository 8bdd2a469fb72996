import { Agent, request } from 'undici';
import type { Config } from '../config.ts';
import { AddressPolicy } from '../core/address-policy.ts';
import { systemClock } from '../core/clock.ts';
import { HeraldError, type ErrorCode } from '../errors.ts';
import { adminSocketPath } from '../http/admin-socket.ts';
import { createServiceDeps } from '../services/deps.ts';
import { OPERATOR_OPS, type OperatorOp } from '../services/operator.ts';
import { readLockHolder } from '../storage/data-dir-lock.ts';
import { openStorage } from '../storage/open.ts';

/**
 * Runs an operator command where the data lives: on PostgreSQL directly; on
 * the embedded database directly when no Herald holds it, or through the
 * running Herald's admin socket when one does.
 */
export async function runOperatorOp(config: Readonly<Config>, op: OperatorOp, args: Record<string, unknown>): Promise<unknown> {
  const holder = config.databaseUrl ? undefined : readLockHolder(config.dataDir);
  if (holder) {
    const agent = new Agent({ connect: { socketPath: adminSocketPath(config.dataDir) } });
    try {
      const res = await request(`http://herald/admin/${op}`, {
        method: 'POST',
        dispatcher: agent,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(args),
      }).catch((cause: unknown) => {
        // The holder is not serving operator commands (yet): still starting, or `herald migrate`.
        throw new HeraldError(
          'conflict',
          `Herald process ${holder.pid} holds ${config.dataDir} but does not answer on its admin socket ` +
            `(${(cause as Error).message}); if it is starting or migrating, try again in a moment`,
          { cause },
        );
      });
      const body = (await res.body.json()) as { result?: unknown; code?: ErrorCode; detail?: string };
      if (res.statusCode >= 400) throw new HeraldError(body.code ?? 'internal_error', body.detail ?? `HTTP ${res.statusCode}`);
      return body.result;
    } finally {
      await agent.close();
    }
  }
  const storage = await openStorage(config);
  try {
    const deps = createServiceDeps({ db: storage.db, encryptionKey: storage.encryptionKey, clock: systemClock, addresses: new AddressPolicy(config.allowedNetworks) });
    return await OPERATOR_OPS[op](deps, args);
  } finally {
    await storage.close();
  }
}
