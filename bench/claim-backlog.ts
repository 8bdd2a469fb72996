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
import { CLAIM_SCAN_FACTOR } from '../packages/server/src/dispatcher/claim.ts';
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
    await db.query('VACUUM ANALYZE deliveries');
    const inFlight = new Map([[capped, CAP]]);
    let ms = 0;
    let taken = 0;
    // A few unmeasured claims first: the statement is prepared on the first.
    for (let i = -3; i < CLAIMS; i++) {
      await db.query(`UPDATE deliveries SET next_attempt_at = now() - interval '1 minute', lease_token = NULL, lease_until = NULL, attempts = 0 WHERE endpoint_id = $1`, [other]);
      const now = new Date();
      const t0 = performance.now();
      const rows = await claimDeliveries(db, { now, limit: CAP, scan: CLAIM_SCAN_FACTOR * CAP, leaseUntil: new Date(now.getTime() + 60_000), maxAttempts: 7, endpointCap: CAP, inFlight });
      if (i >= 0) {
        ms += performance.now() - t0;
        taken += rows.length;
      }
    }
    return { ms: ms / CLAIMS, taken: taken / CLAIMS };
  });
}

console.log(`One claim (room for ${CAP} at the other endpoint, head of ${CLAIM_SCAN_FACTOR * CAP} rows, as the dispatcher reads it), mean of ${CLAIMS}, PostgreSQL:`);
console.log('| capped endpoint\'s due backlog | ms per claim | rows of the other endpoint taken |');
console.log('|---:|---:|---:|');
for (const n of opts.backlog!.split(',').map(Number)) {
  const r = await measure(n);
  console.log(`| ${n.toLocaleString('en')} | ${r.ms.toFixed(2)} | ${r.taken} |`);
}
