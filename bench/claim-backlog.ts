/**
 * `npm run bench:claim`: what one claim costs while an endpoint at its
 * concurrency cap has a due backlog of N rows older than another endpoint's
 * 10, on PostgreSQL (a database of its own, dropped at the end). The claim
 * should take the other endpoint's 10 in about the same time whatever N is.
 *
 *   npm run bench:claim -- --backlog 0,100000,1000000 --claims 50
 */
import { parseArgs } from 'node:util';
import { claimDeliveries } from '../packages/server/src/storage/queries/claim-deliveries.ts';
import { BENCH_ACCOUNT, withScratchDatabase } from './scratch-database.ts';

const { values: opts } = parseArgs({
  options: {
    backlog: { type: 'string', default: '0,100000,1000000' },
    claims: { type: 'string', default: '50' },
    'database-url': { type: 'string', default: process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres' },
  },
});
const CLAIMS = Number(opts.claims);
const CAP = 64;

async function measure(backlog: number): Promise<{ ms: number; taken: number }> {
  const account = BENCH_ACCOUNT;
  const capped = '00000000-0000-4000-8000-00000000000a';
  const other = '00000000-0000-4000-8000-00000000000b';
  return withScratchDatabase(opts['database-url']!, 'claim', [capped, other], async (db) => {
    const event = (
      await db.query<{ id: string }>(
        `INSERT INTO events (account_id, id, type, created_at, body, request_hash) VALUES ($1, herald_uuid_v7(now()), 'shipment.created', now(), '\\x7b7d', '\\x00') RETURNING id`,
        [account],
      )
    ).rows[0]!.id;
    // The capped endpoint's backlog: due an hour ago onwards, so it is the head of the due order.
    await db.query(
      `INSERT INTO deliveries (id, account_id, event_id, endpoint_id, state, next_attempt_at, created_at, updated_at)
       SELECT herald_uuid_v7(now()), $1, $2, $3, 'pending', now() - interval '1 hour' + i * interval '1 ms', now(), now() FROM generate_series(1, $4::int) i ORDER BY random()`,
      [account, event, capped, backlog],
    );
    await db.query(
      `INSERT INTO deliveries (id, account_id, event_id, endpoint_id, state, next_attempt_at, created_at, updated_at)
       SELECT herald_uuid_v7(now()), $1, $2, $3, 'pending', now() - interval '1 minute', now(), now() FROM generate_series(1, 10)`,
      [account, event, other],
    );
    // The capped endpoint is at its cap: CAP of its rows are in flight.
    await db.query(
      `INSERT INTO in_flight (delivery_id, endpoint_id, origin, lease_token, lease_until)
       SELECT d.id, d.endpoint_id, ep.origin, nextval('delivery_lease_token'), now() + interval '1 hour'
         FROM deliveries d JOIN endpoints ep ON ep.id = d.endpoint_id WHERE d.endpoint_id = $1 ORDER BY d.next_attempt_at LIMIT $2`,
      [capped, CAP],
    );
    await db.query('VACUUM ANALYZE deliveries');
    let ms = 0;
    let taken = 0;
    // A few unmeasured claims first: the statement is prepared on the first.
    for (let i = -3; i < CLAIMS; i++) {
      await db.query(`DELETE FROM in_flight WHERE endpoint_id = $1`, [other]);
      const t0 = performance.now();
      // Both endpoints share one origin here: its cap leaves room past the capped endpoint's.
      const rows = await claimDeliveries(db, { now: null, limit: CAP, leaseMs: 60_000, endpointCap: CAP, originCap: 2 * CAP });
      if (i >= 0) {
        ms += performance.now() - t0;
        taken += rows.length;
      }
    }
    return { ms: ms / CLAIMS, taken: taken / CLAIMS };
  });
}

console.log(`One claim (room for ${CAP} at the other endpoint), mean of ${CLAIMS}, PostgreSQL:`);
console.log('| capped endpoint\'s due backlog | ms per claim | rows of the other endpoint taken |');
console.log('|---:|---:|---:|');
for (const n of opts.backlog!.split(',').map(Number)) {
  const r = await measure(n);
  console.log(`| ${n.toLocaleString('en')} | ${r.ms.toFixed(2)} | ${r.taken} |`);
}
