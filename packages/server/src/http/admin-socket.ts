import Fastify, { type FastifyInstance } from 'fastify';
import { chmodSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { HeraldError } from '../errors.ts';
import type { ServiceDeps } from '../services/deps.ts';
import { isOperatorOp, OPERATOR_OPS } from '../services/operator.ts';
import { sendProblem, toProblem } from './problem.ts';

export function adminSocketPath(dataDir: string): string {
  return join(dataDir, 'herald.sock');
}

/**
 * The embedded database belongs to one process, so operator commands reach a
 * running Herald through a Unix socket in its data directory (mode 0600: only
 * the user who runs Herald can use it). It serves exactly the CLI's commands.
 */
export async function listenAdminSocket(deps: ServiceDeps, dataDir: string): Promise<FastifyInstance> {
  const app = Fastify({ logger: false });
  app.setErrorHandler((error, request, reply) => sendProblem(reply, toProblem(error, request)));
  app.post<{ Params: { op: string }; Body: Record<string, unknown> }>('/admin/:op', async (req) => {
    const { op } = req.params;
    if (!isOperatorOp(op)) throw new HeraldError('route_not_found', `unknown operator command ${op}`);
    return { result: await OPERATOR_OPS[op](deps, req.body ?? {}) };
  });
  const path = adminSocketPath(dataDir);
  // We hold the data-directory lock, so a socket file here is a leftover.
  rmSync(path, { force: true });
  await app.listen({ path });
  chmodSync(path, 0o600);
  return app;
}
