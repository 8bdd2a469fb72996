/**
 * `npm run bench:publish`: what the publish statement costs PostgreSQL per
 * event, by how many events share one statement (and one commit). Single
 * publishes share a statement when they arrive while the statement slots are
 * busy (services/publish-queue.ts); at a steady 1,000 events/s they shared
 * 2 to 4 per statement in the benchmark's runs. A database of its own
 * (dropped at the end), one endpoint subscribed, EVENTS events per size, each
 * statement in its own commit as the API runs it. Prints, per 1,000 events:
 * the server process's CPU, wall time, WAL and buffers (see measureServer).
 *
 *   npm run bench:publish -- --events 4000 --sizes 1,2,4,8,16 --rounds 2
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { requestHash, serialiseEnvelope } from '../packages/server/src/core/envelope.ts';
import { insertEventsWithDeliveries, type NewEvent } from '../packages/server/src/storage/queries/events.ts';
import { logisticsEvents } from './workload.ts';
import { BENCH_ACCOUNT, COST_HEADER, costRow, measureServer, withScratchDatabase } from './scratch-database.ts';

const { values: opts } = parseArgs({
  options: {
    events: { type: 'string', default: '4000' },
    sizes: { type: 'string', default: '1,2,4,8,16' },
    rounds: { type: 'string', default: '2' },
    'database-url': { type: 'string', default: process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres' },
  },
});
const EVENTS = Number(opts.events);
const SIZES = opts.sizes!.split(',').map(Number);
const ROUNDS = Number(opts.rounds);

const gen = logisticsEvents();
function events(n: number): NewEvent[] {
  return Array.from({ length: n }, () => {
    const { type, data } = gen.next().value as { type: string; data: unknown };
    const id = randomUUID();
    const createdAt = new Date();
    return {
      accountId: BENCH_ACCOUNT,
      id,
      type,
      createdAt,
      body: serialiseEnvelope({ id, type, created_at: createdAt.toISOString(), data }),
      requestHash: requestHash(type, data),
    };
  });
}

const rows: string[] = [];
await withScratchDatabase(opts['database-url']!, 'publish', ['00000000-0000-4000-8000-000000000010'], async (db) => {
  // The endpoint takes every type the workload makes.
  await db.query(`UPDATE endpoints SET event_types = ARRAY(SELECT name FROM event_types)`);
  // Warm the statement up (it is prepared on first use) and the tables' first pages.
  for (let i = 0; i < 20; i++) await insertEventsWithDeliveries(db, events(4));
  for (let round = 1; round <= ROUNDS; round++) {
    for (const size of SIZES) {
      const statements = Array.from({ length: Math.ceil(EVENTS / size) }, () => events(size));
      await db.query('CHECKPOINT');
      const cost = await measureServer(db, statements.length * size, async () => {
        for (const s of statements) await insertEventsWithDeliveries(db, s);
      });
      rows.push(costRow(`${size} | ${round}`, cost));
    }
  }
});
console.log(`Publishing ${EVENTS.toLocaleString('en')} events per size to one endpoint, each statement its own commit; per 1,000 events:`);
console.log(`| events per statement | round | ${COST_HEADER}`);
console.log('|---:|---:|---:|---:|---:|---:|---:|');
for (const r of rows) console.log(r);
