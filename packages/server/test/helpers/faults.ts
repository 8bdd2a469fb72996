import { randomUUID } from 'node:crypto';
import { systemClock } from '../../src/core/clock.ts';
import { createAccount, createApiKey } from '../../src/services/accounts.ts';
import { createServiceDeps } from '../../src/services/deps.ts';
import { createEndpoint } from '../../src/services/endpoints.ts';
import { openPostgres } from '../../src/storage/postgres.ts';
import { TEST_ADDRESSES, TEST_KEY } from './herald.ts';
import type { ReceivedRequest } from './receiver.ts';

/** An account, its API key and one endpoint for shipment.created at `receiverUrl`, made on the database at `url`. */
export async function seedAccount(url: string, receiverUrl: string): Promise<{ accountId: string; key: string }> {
  const db = await openPostgres({ connectionString: url, max: 1 });
  try {
    const deps = createServiceDeps({ db, encryptionKey: TEST_KEY, clock: systemClock, addresses: TEST_ADDRESSES });
    const accountId = (await createAccount(db, 'Acme')).id;
    const { key } = await createApiKey(db, accountId);
    await createEndpoint(deps, accountId, { url: receiverUrl, event_types: ['shipment.created'] });
    return { accountId, key };
  } finally {
    await db.close();
  }
}

export interface Answer {
  status: number;
  json: any;
  headers: Headers;
  ms: number;
}

/** One HTTP call, timed; a call that gets no answer within 20 s fails the test. */
export async function call(url: string, method: string, key?: string, body?: unknown): Promise<Answer> {
  const started = performance.now();
  const res = await fetch(url, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(20_000),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined, headers: res.headers, ms: performance.now() - started };
}

/**
 * Publishes events with ids of its own and remembers the ids Herald
 * acknowledged (2xx): those, and only those, must all be delivered.
 */
export function publisher(apiUrl: string, key: string) {
  const acknowledged = new Set<string>();
  const statuses = new Map<number, number>();
  let serial = 0;
  return {
    acknowledged,
    statuses,
    async publish(): Promise<Answer> {
      const id = randomUUID();
      const answer = await call(`${apiUrl}/v1/events`, 'POST', key, { id, type: 'shipment.created', data: { id: serial++ } });
      statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
      if (answer.status >= 200 && answer.status < 300) acknowledged.add(id);
      return answer;
    },
  };
}

export const eventIds = (rs: readonly ReceivedRequest[]) => new Set(rs.map((r) => String(r.headers['x-service-event-id'])));

/** Every acknowledged id has reached the receiver. */
export const allDelivered = (acknowledged: ReadonlySet<string>) => (rs: readonly ReceivedRequest[]) => {
  const got = eventIds(rs);
  for (const id of acknowledged) if (!got.has(id)) return false;
  return true;
};

/** Rejects after `ms` with `what`: a bound on waiting for something event-driven. */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/** Resolves once the process has written `pattern` to its standard error. */
export function printed(child: import('node:child_process').ChildProcess, stderr: () => string, pattern: RegExp): Promise<void> {
  return new Promise((resolve) => {
    const look = () => {
      if (!pattern.test(stderr())) return;
      child.stderr!.off('data', look);
      resolve();
    };
    child.stderr!.on('data', look);
    look();
  });
}
