/**
 * `npm run bench:record`: what the recorder's statement costs PostgreSQL per
 * delivery, apart from everything else the dispatcher does: a database of its
 * own (dropped at the end) with DELIVERIES leased deliveries over 10
 * endpoints, recorded in batches of BATCH (each with its attempt, as the
 * dispatcher does), ROUNDS times over fresh leases. Prints, per 1,000
 * deliveries recorded: the server process's CPU time (from /proc, so the
 * server must be on this machine), wall time, WAL written, and buffers hit
 * and read (pg_stat_database). WAL and buffers hold still while the
 * machine's speed drifts; CPU and wall time do not. The WAL position is the
 * whole server's: run it while nothing else writes to that PostgreSQL.
 *
 *   npm run bench:record -- --deliveries 20000 --batch 64 --rounds 3
 */
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { uuidV7 } from '../packages/server/src/core/ids.ts';
import { recordResults, type DeliveryResult } from '../packages/server/src/storage/queries/record-results.ts';
import { BENCH_ACCOUNT, COST_HEADER, costRow, measureServer, withScratchDatabase } from './scratch-database.ts';

const { values: opts } = parseArgs({
  options: {
    deliveries: { type: 'string', default: '20000' },
    batch: { type: 'string', default: '64' },
    rounds: { type: 'string', default: '3' },
    'database-url': { type: 'string', default: process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres' },
  },
});
const DELIVERIES = Number(opts.deliveries);
const BATCH = Number(opts.batch);
const ROUNDS = Number(opts.rounds);

const rows: string[] = [];
const account = BENCH_ACCOUNT;
const endpoints = Array.from({ length: 10 }, (_, i) => `00000000-0000-4000-8000-0000000000${String(i + 10)}`);
await withScratchDatabase(opts['database-url']!, 'record', endpoints, async (db) => {
  const body = Buffer.from(JSON.stringify({ id: 'x', type: 'shipment.created', data: { shipment: 'SH-1', weight_kg: 12.5 } }));
  for (let round = 0; round < ROUNDS; round++) {
    // Fresh events and deliveries, in flight as a claim leaves them.
    const { rows: leased } = await db.query<{ id: string; endpoint_id: string; event_id: string; lease_token: string }>(
      `WITH ev AS (
         INSERT INTO events (account_id, id, type, created_at, body, request_hash)
         SELECT $1, herald_uuid_v7(now()), 'shipment.created', now(), $2, '\\x00' FROM generate_series(1, $3::int / 10)
         RETURNING id
       ), d AS (
         INSERT INTO deliveries (id, account_id, event_id, endpoint_id, state, next_attempt_at, created_at, updated_at)
         SELECT herald_uuid_v7(now()), $1, ev.id, ep, 'pending', now(), now(), now()
           FROM ev CROSS JOIN unnest($4::uuid[]) AS ep
         RETURNING id, endpoint_id, event_id
       ), f AS (
         INSERT INTO in_flight (delivery_id, endpoint_id, origin, lease_token, lease_until)
         SELECT d.id, d.endpoint_id, 'https://127.0.0.1', nextval('delivery_lease_token'), now() + interval '1 minute' FROM d
         RETURNING delivery_id, lease_token
       )
       SELECT d.id, d.endpoint_id, d.event_id, f.lease_token::text AS lease_token FROM d JOIN f ON f.delivery_id = d.id`,
      [account, body, DELIVERIES, endpoints],
    );
    await db.query('ANALYZE deliveries');
    await db.query('CHECKPOINT');
    const now = new Date();
    const batches: DeliveryResult[][] = [];
    for (let i = 0; i < leased.length; i += BATCH) {
      const slice = leased.slice(i, i + BATCH);
      batches.push(
        slice.map((d) => ({
          deliveryId: d.id,
          leaseToken: Number(d.lease_token),
          endpointId: d.endpoint_id,
          outcome: 'succeeded',
          retryInMs: null,
          status: 204,
          error: null,
          throttle: null,
          attempt: {
            id: uuidV7(),
            accountId: account,
            endpointId: d.endpoint_id,
            deliveryId: d.id,
            eventId: d.event_id,
            eventType: 'shipment.created',
            attemptNumber: 1,
            isTest: false,
            startedAt: now,
            durationMs: 3,
            statusCode: 204,
            outcome: 'succeeded',
            error: null,
            url: 'https://127.0.0.1/',
            signature: `v1=${randomBytes(32).toString('hex')}`,
            responseExcerpt: null,
            testBody: null,
          },
        })),
      );
    }
    const cost = await measureServer(db, leased.length, async () => {
      for (const b of batches) await recordResults(db, { results: b, now, disableAfter: 20, endpointCap: 64 });
    });
    rows.push(costRow(String(round + 1), cost));
  }
});
console.log(`Recording ${DELIVERIES.toLocaleString('en')} leased deliveries (10 endpoints), ${BATCH} per statement, each with its attempt; per 1,000 deliveries:`);
console.log(`| round | ${COST_HEADER}`);
console.log('|---:|---:|---:|---:|---:|---:|');
for (const r of rows) console.log(r);
