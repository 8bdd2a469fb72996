/**
 * `npm run bench:dispatch`: what the worker's own JavaScript costs per
 * delivery, apart from the network and the database. The real dispatcher,
 * attempter (signing included), results, metrics and recordResults build
 * every statement's parameters as they do in production; the database
 * answers at once (every lease held, every endpoint enabled) and each
 * request is answered 204 at once, without a socket. Prints CPU ms per
 * 1,000 deliveries, which on this machine moves by a few per cent between
 * runs of the same code, against far more for the whole bench: use it to
 * compare two versions of the dispatcher's code, in pairs.
 *
 *   npm run bench:dispatch -- --deliveries 200000 --claim 232 --endpoints 10
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { DEFAULT_RETRY, type DispatcherConfig } from '../packages/server/src/config.ts';
import { encryptSecret, generateSigningSecret } from '../packages/server/src/core/secrets.ts';
import { createDispatcher } from '../packages/server/src/dispatcher/dispatcher.ts';
import { observeResults } from '../packages/server/src/dispatcher/observe.ts';
import { createMetrics } from '../packages/server/src/metrics/metrics.ts';
import type { Db, QueryResult } from '../packages/server/src/storage/db.ts';
import type { ClaimedDelivery } from '../packages/server/src/storage/queries/claim-deliveries.ts';
import { recordResults } from '../packages/server/src/storage/queries/record-results.ts';
import { logisticsEvents } from './workload.ts';

const { values: opts } = parseArgs({
  options: {
    deliveries: { type: 'string', default: '200000' },
    /** Rows per claim: about what a claim takes in the bench's burst on ten origins. */
    claim: { type: 'string', default: '232' },
    endpoints: { type: 'string', default: '10' },
    rounds: { type: 'string', default: '3' },
  },
});
const DELIVERIES = Number(opts.deliveries);
const CLAIM = Number(opts.claim);
const ENDPOINTS = Number(opts.endpoints);

const key = randomBytes(32);
const endpoints = Array.from({ length: ENDPOINTS }, (_, i) => {
  const id = randomUUID();
  return { id, secret: encryptSecret(key, generateSigningSecret(), id), url: `https://hooks.example.com:${9000 + i}/herald`, origin: `https://hooks.example.com:${9000 + i}` };
});
const accountId = randomUUID();
const event = logisticsEvents().next().value!;
const body = Buffer.from(JSON.stringify({ id: randomUUID(), type: event.type, created_at: new Date().toISOString(), data: event.data }));
let leaseToken = 0;

function claimed(n: number): ClaimedDelivery[] {
  return Array.from({ length: n }, (_, i) => {
    const ep = endpoints[i % ENDPOINTS]!;
    return {
      id: randomUUID(), account_id: accountId, event_id: randomUUID(), endpoint_id: ep.id, attempt: 1, lease_token: ++leaseToken,
      type: event.type, body, url: ep.url, origin: ep.origin, secret_encrypted: ep.secret, signature_scheme: 'herald',
      previous_secret_encrypted: null, previous_secret_until: null, enabled: true, headers: null,
    };
  });
}

/** A database that answers recordResults' call at once: each lease held, no endpoint disabled. */
function instantDatabase(): Db {
  return {
    async query<R>(text: string, params?: readonly unknown[]): Promise<QueryResult<R>> {
      if (!text.includes('herald_record(')) return { rows: [], rowCount: 0 };
      const applied = String(params![0]).slice(1, -1).split(',');
      return { rows: [{ applied, disabled: [] }] as R[], rowCount: 1 };
    },
  } as Partial<Db> as Db;
}

async function run(): Promise<number> {
  const db = instantDatabase();
  const config: DispatcherConfig = {
    concurrency: 500, endpointConcurrency: 64, originConcurrency: 64, leaseMs: 60_000, pollMs: 1_000,
    requestTimeoutMs: 10_000, disableAfter: 20, retry: DEFAULT_RETRY,
  };
  const record = (results: Parameters<typeof recordResults>[1]['results'], now: Date | null) =>
    recordResults(db, { results, now, disableAfter: config.disableAfter, endpointCap: config.endpointConcurrency });
  let left = DELIVERIES;
  const dispatcher = createDispatcher({
    config,
    clock: () => new Date(),
    encryptionKey: key,
    claim: async (p) => {
      const n = Math.min(p.limit, CLAIM, left);
      left -= n;
      return claimed(n);
    },
    giveBack: async () => {},
    nextDueIn: async () => undefined,
    send: async () => ({ result: { stage: 'response', status: 204 }, excerpt: null, durationMs: 1 }),
    record: observeResults(record, { metrics: createMetrics({ endpointLabels: false }) }),
  });
  const before = process.cpuUsage();
  let delivered = 0;
  while (left > 0) delivered += (await dispatcher.tick()).succeeded;
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000 / (delivered / 1000);
}

// The first round warms the JIT up and is left out.
await run();
const figures: string[] = [];
for (let i = 0; i < Number(opts.rounds); i++) figures.push((await run()).toFixed(1));
console.log(`the worker's own JavaScript, CPU ms per 1,000 deliveries (${CLAIM} per claim, ${ENDPOINTS} endpoints; the claim's rows are made up in that time too): ${figures.join(', ')}`);
