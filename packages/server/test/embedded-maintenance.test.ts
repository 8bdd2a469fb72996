import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestHerald, type TestHerald } from './helpers/herald.ts';
import { startReceiver, type Receiver } from './helpers/receiver.ts';
import pg from 'pg';
import { openPostgres } from '../src/storage/postgres.ts';
import { ENGINES, createTestDb, type TestDb } from './helpers/engines.ts';
import { DEFAULT_PANEL_AUTH, DEFAULT_RETENTION } from '../src/config.ts';
import { createMaintainer } from '../src/maintenance/maintainer.ts';
import { analyzeStaleTables, STATISTICS_LOCK, STATISTICS_MAX_ROWS, vacuumEmbedded } from '../src/storage/maintenance.ts';

const MAINTAINER_CONFIG = { retention: DEFAULT_RETENTION, sessionIdleMs: DEFAULT_PANEL_AUTH.sessionIdleMs };

// PGlite only: it runs PostgreSQL in single-user mode, where autovacuum never
// runs. (On PostgreSQL, autovacuum does this work.)
describe('the embedded engine is vacuumed and analysed by Herald [pglite]', () => {
  let h: TestHerald;
  let receiver: Receiver;

  before(async () => {
    h = await createTestHerald('pglite');
    receiver = await startReceiver();
    await h.api('POST', '/v1/endpoints', { url: receiver.url, event_types: ['shipment.created'] });
    for (let i = 0; i < 30; i++) await h.api('POST', '/v1/events', { type: 'shipment.created', data: { id: `m-${i}` } });
    await h.dispatcher.tick();
  });
  after(async () => {
    await h.close();
    await receiver.close();
  });

  async function stats() {
    const { rows } = await h.db.query<{ reltuples: number; relallvisible: number }>(
      `SELECT reltuples::float8 AS reltuples, relallvisible FROM pg_class WHERE relname = 'deliveries'`,
    );
    return rows[0]!;
  }

  test('without it the planner has no statistics; one pass gives them and marks pages all-visible', async () => {
    assert.equal((await stats()).reltuples, -1, 'PGlite never analysed the table on its own');
    await vacuumEmbedded(h.db);
    const after = await stats();
    assert.equal(after.reltuples, 30);
    assert.ok(after.relallvisible > 0, 'VACUUM ran: pages are marked all-visible');
  });

  test('the maintainer runs the pass', async () => {
    for (let i = 0; i < 20; i++) await h.api('POST', '/v1/events', { type: 'shipment.created', data: { id: `n-${i}` } });
    assert.equal((await stats()).reltuples, 30, 'nothing analysed the new rows yet');
    const errors: unknown[] = [];
    const maintainer = createMaintainer({ db: h.db, clock: h.clock.now, config: MAINTAINER_CONFIG, log: { info() {}, warn() {}, error: (o) => errors.push(o) }, onSchemaTooNew() {} });
    const report = await maintainer.runOnce();
    await maintainer.stop();
    assert.deepEqual(report.maintained, ['vacuum (analyze) of the busy tables']);
    assert.equal((await stats()).reltuples, 50);
    assert.deepEqual(errors, []);
  });
});

// PostgreSQL only: autovacuum analyses at most once a minute, and every
// connection keeps the generic plans it made from the statistics it found.
describe('on PostgreSQL, a table that outgrew its statistics is analysed at once [postgres]', { skip: !ENGINES.includes('postgres') }, () => {
  let db: TestDb;
  let writer: pg.Client;

  before(async () => {
    db = await createTestDb('postgres');
    writer = new pg.Client({ connectionString: db.url });
    await writer.connect();
    // The tests count what ANALYZE saw; autovacuum analysing in between would move it.
    await writer.query('ALTER TABLE accounts SET (autovacuum_enabled = false)');
  });
  after(async () => {
    await writer?.end();
    await db?.close();
  });

  /** Adds n accounts from one connection and publishes its table counters at once (they are otherwise sent up to 10 s later). */
  async function addAccounts(n: number) {
    await writer.query(`INSERT INTO accounts (id, name) SELECT gen_random_uuid(), 'a' || g FROM generate_series(1, $1) g`, [n]);
    await writer.query('SELECT pg_stat_force_next_flush()');
  }
  const reltuples = async () =>
    (await db.query<{ n: number }>(`SELECT reltuples::float8 AS n FROM pg_class WHERE relname = 'accounts'`)).rows[0]!.n;
  const check = () => analyzeStaleTables(db, { tables: ['accounts', 'endpoints'], minRows: 10 });

  test('analysed at each doubling, not before; updates do not count; a table that did not grow is left alone', async () => {
    await addAccounts(30);
    assert.deepEqual(await check(), ['accounts'], 'never analysed, 30 rows: behind');
    assert.equal(await reltuples(), 30);
    assert.deepEqual(await check(), [], 'just analysed');
    await writer.query(`UPDATE accounts SET name = name || '!'`);
    await addAccounts(20);
    assert.deepEqual(await check(), [], '30 updates and 20 new rows on 30: not doubled');
    await addAccounts(10);
    assert.deepEqual(await check(), ['accounts'], '60 rows, twice the 30 counted');
    assert.equal(await reltuples(), 60);
  });

  test('a role that does not own the tables analyses nothing (PostgreSQL would only warn), and no pass fails', async () => {
    await addAccounts(240);
    const role = `herald_stats_${process.pid}`;
    await writer.query(`CREATE ROLE ${role} LOGIN`);
    await writer.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ${role}`);
    const url = new URL(db.url!);
    url.username = role;
    const asOther = await openPostgres({ connectionString: url.toString(), max: 1 });
    try {
      assert.deepEqual(await analyzeStaleTables(asOther, { tables: ['accounts'], minRows: 10 }), []);
    } finally {
      await asOther.close();
      await writer.query(`DROP OWNED BY ${role}`);
      await writer.query(`DROP ROLE ${role}`);
    }
    assert.deepEqual(await check(), ['accounts'], 'the owner does it');
  });

  test('one process at a time: while another holds the lock, a pass does nothing', async () => {
    await addAccounts(480);
    await writer.query('SELECT pg_advisory_lock($1)', [STATISTICS_LOCK]);
    try {
      assert.deepEqual(await check(), []);
    } finally {
      await writer.query('SELECT pg_advisory_unlock($1)', [STATISTICS_LOCK]);
    }
    assert.deepEqual(await check(), ['accounts']);
  });

  test('the maintainer runs the check on the busy tables, and vacuums the churning ones', async () => {
    await addAccounts(1_000); // the default: at least 1,000 rows
    assert.deepEqual(await analyzeStaleTables(db, { tables: ['accounts'] }), ['accounts']);
    assert.equal(await reltuples(), 1_780);
    const { rows } = await db.query<{ id: string }>('SELECT id FROM accounts LIMIT 1');
    await writer.query(
      `INSERT INTO idempotency_keys (account_id, key, request_hash, created_at) SELECT $1, 'k' || g, '\\x00', now() FROM generate_series(1, 1000) g`,
      [rows[0]!.id],
    );
    await writer.query('SELECT pg_stat_force_next_flush()');
    const errors: unknown[] = [];
    const maintainer = createMaintainer({ db, clock: () => new Date(), config: MAINTAINER_CONFIG, log: { info() {}, warn() {}, error: (o) => errors.push(o) }, onSchemaTooNew() {} });
    const report = await maintainer.runOnce();
    await maintainer.stop();
    assert.ok(report.maintained?.includes('analyze idempotency_keys'), String(report.maintained));
    assert.ok(report.maintained?.includes('vacuum attempt_log_grown'), String(report.maintained));
    assert.deepEqual(errors, []);
  });

  test('a table whose last ANALYZE counted maxRows or more is left to autovacuum, however much it grows', async () => {
    await addAccounts(1_780);
    const grown = () => analyzeStaleTables(db, { tables: ['accounts'], minRows: 10, maxRows: 1_780 });
    assert.deepEqual(await grown(), [], '3,560 rows, doubled, but the last ANALYZE counted 1,780');
    assert.equal(await reltuples(), 1_780);
    assert.deepEqual(await analyzeStaleTables(db, { tables: ['accounts'], minRows: 10, maxRows: 1_781 }), ['accounts'], 'one row under the limit: analysed');
    assert.equal(await reltuples(), 3_560);
    // The default limit.
    assert.equal(STATISTICS_MAX_ROWS, 10_000);
    await addAccounts(3_560);
    assert.deepEqual(await check(), ['accounts'], '7,120 rows, last counted 3,560');
    await addAccounts(7_120);
    assert.deepEqual(await check(), ['accounts'], '14,240 rows, last counted 7,120');
    await addAccounts(14_240);
    assert.deepEqual(await check(), [], '28,480 rows, but the last ANALYZE counted 14,240');
    assert.equal(await reltuples(), 14_240);
  });
});
