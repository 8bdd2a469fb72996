import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { DEFAULT_PANEL_AUTH, loadConfig, type RetentionConfig } from '../src/config.ts';
import { uuidV7 } from '../src/core/ids.ts';
import { createMaintainer, MAINTAINER_LOCK, type Maintainer, type MaintainerTuning } from '../src/maintenance/maintainer.ts';
import type { Db } from '../src/storage/db.ts';
import { openPostgres } from '../src/storage/postgres.ts';
import { getEventForNewDelivery } from '../src/storage/queries/events.ts';
import { ENGINES, createTestDb, type TestDb } from './helpers/engines.ts';
import { createTestClock, type TestClock } from './helpers/clock.ts';

const DAY = 86_400_000;
const RETENTION: RetentionConfig = { succeededDays: 30, undeliveredDays: 90 };
const quiet = { info() {}, warn() {}, error() {} };

/** A maintainer on `db` with the test clock; errors it logs are collected in `errors`. */
function maintainerOf(db: Db, clock: TestClock, options: { tuning?: Partial<MaintainerTuning>; errors?: unknown[]; onSchemaTooNew?: () => void } = {}): Maintainer {
  return createMaintainer({
    db,
    clock: clock.now,
    config: { retention: RETENTION, sessionIdleMs: DEFAULT_PANEL_AUTH.sessionIdleMs },
    log: { ...quiet, error: (obj: object) => options.errors?.push(obj) },
    onSchemaTooNew: options.onSchemaTooNew ?? (() => {}),
    tuning: { batchPauseMs: 0, ...options.tuning },
  });
}

/** One run of a maintainer made for it, stopped after (so that it gives the lead up). */
async function runOnce(db: Db, clock: TestClock, options: Parameters<typeof maintainerOf>[2] = {}) {
  const maintainer = maintainerOf(db, clock, options);
  try {
    return await maintainer.runOnce();
  } finally {
    await maintainer.stop();
  }
}

/** Rows written straight to the tables, with the times a test needs. */
function fixtures(db: Db, clock: TestClock) {
  const ago = (days: number) => new Date(clock.now().getTime() - days * DAY);
  return {
    ago,
    async account(): Promise<string> {
      const id = randomUUID();
      await db.query(`INSERT INTO accounts (id, name) VALUES ($1, 'test')`, [id]);
      await db.query(`INSERT INTO event_types (name, schema) VALUES ('test.thing', '{}') ON CONFLICT DO NOTHING`);
      return id;
    },
    async endpoint(accountId: string): Promise<string> {
      const id = randomUUID();
      await db.query(
        `INSERT INTO endpoints (id, account_id, url, origin, event_types, secret_encrypted, secret_hint)
         VALUES ($1, $2, 'https://receiver.example/hook', 'https://receiver.example', '{test.thing}', '\\x00', 'whsec_…')`,
        [id, accountId],
      );
      return id;
    },
    async event(accountId: string, createdDaysAgo: number): Promise<string> {
      const id = randomUUID();
      await db.query(`INSERT INTO events (account_id, id, type, created_at, body, request_hash) VALUES ($1, $2, 'test.thing', $3, '\\x7b7d', '\\x00')`, [
        accountId,
        id,
        ago(createdDaysAgo),
      ]);
      return id;
    },
    async delivery(p: { accountId: string; eventId: string; endpointId: string; state: string; createdDaysAgo: number; updatedDaysAgo: number }): Promise<string> {
      const created = ago(p.createdDaysAgo);
      const id = uuidV7(created.getTime());
      await db.query(
        `INSERT INTO deliveries (id, account_id, event_id, endpoint_id, state, next_attempt_at, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $6, $7)`,
        [id, p.accountId, p.eventId, p.endpointId, p.state, created, ago(p.updatedDaysAgo)],
      );
      return id;
    },
    /** `n` attempts of one endpoint in one statement, the newest started `startDaysAgo`, one second apart. */
    async attempts(on: Db, p: { accountId: string; endpointId: string; deliveryId?: string; eventId?: string; n: number; startDaysAgo?: number }): Promise<void> {
      const start = ago(p.startDaysAgo ?? 0);
      await on.query(
        `INSERT INTO attempts (id, account_id, endpoint_id, delivery_id, event_id, event_type, attempt_number, started_at, duration_ms, outcome, signature)
         SELECT gen_random_uuid(), $1, $2, $3, $4, 'test.thing', 1, $5::timestamptz - make_interval(secs => g), 5, 'succeeded', 'v1,x'
           FROM generate_series(0, $6 - 1) g`,
        [p.accountId, p.endpointId, p.deliveryId ?? null, p.eventId ?? randomUUID(), start, p.n],
      );
    },
  };
}

async function ids(db: Db, table: string): Promise<Set<string>> {
  return new Set((await db.query<{ id: string }>(`SELECT id FROM ${table}`)).rows.map((r) => r.id));
}

async function count(db: Db, sql: string, params: unknown[] = []): Promise<number> {
  return (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${sql}`, params)).rows[0]!.n;
}

for (const engine of ENGINES) {
  describe(`the maintainer [${engine}]`, () => {
    let db: TestDb;
    let clock: TestClock;
    let f: ReturnType<typeof fixtures>;

    before(async () => {
      db = await createTestDb(engine);
    });
    after(async () => {
      await db?.close();
    });

    async function fresh(): Promise<void> {
      // Each test starts from empty tables (one database for the file keeps it fast).
      await db.query('DELETE FROM attempts');
      await db.query('DELETE FROM deliveries');
      await db.query('DELETE FROM events');
      await db.query('DELETE FROM attempt_log_grown');
      await db.query('DELETE FROM accounts');
      clock = createTestClock();
      f = fixtures(db, clock);
    }

    test('retention deletes exactly what is past each cut-off, never pending work, and events once no delivery remains', async () => {
      await fresh();
      const account = await f.account();
      const endpoint = await f.endpoint(account);
      const other = await f.endpoint(account);
      const d = async (state: string, createdDaysAgo: number, updatedDaysAgo: number, eventId?: string, endpointId = endpoint) => {
        const event = eventId ?? (await f.event(account, createdDaysAgo));
        return { event, delivery: await f.delivery({ accountId: account, eventId: event, endpointId, state, createdDaysAgo, updatedDaysAgo }) };
      };
      const gone = {
        succeeded: await d('succeeded', 31, 30.01),
        failed: await d('failed', 95, 90.01),
        skipped: await d('skipped', 91, 90.5),
      };
      const kept = {
        succeeded: await d('succeeded', 31, 29.99),
        // Created long ago, finished (or sent again) within the retention: counted from the change.
        changedLately: await d('succeeded', 60, 10),
        failed: await d('failed', 95, 89.99),
        skipped: await d('skipped', 60, 40),
        // Never, however old.
        pending: await d('pending', 400, 400),
      };
      // An event with one delivery past its retention and one that is not: the event stays.
      const shared = await d('succeeded', 40, 40);
      const sharedKept = await d('failed', 40, 40, shared.event, other);
      // Events no endpoint subscribed to: kept for the succeeded retention.
      const lonelyOld = await f.event(account, 30.01);
      const lonelyNew = await f.event(account, 29.99);
      // Attempts of deleted deliveries go; those of kept ones stay.
      await f.attempts(db, { accountId: account, endpointId: endpoint, deliveryId: gone.succeeded.delivery, eventId: gone.succeeded.event, n: 2, startDaysAgo: 31 });
      await f.attempts(db, { accountId: account, endpointId: endpoint, deliveryId: kept.succeeded.delivery, eventId: kept.succeeded.event, n: 3, startDaysAgo: 31 });

      const report = await runOnce(db, clock);
      assert.equal(report.leader, true);
      assert.deepEqual(report.retention, { deliveries: 4, attempts: 2, events: 4, more: false });

      const deliveries = await ids(db, 'deliveries');
      for (const [name, x] of Object.entries(gone)) assert.ok(!deliveries.has(x.delivery), `${name} past its retention is deleted`);
      for (const [name, x] of Object.entries(kept)) assert.ok(deliveries.has(x.delivery), `${name} is kept`);
      assert.ok(!deliveries.has(shared.delivery));
      assert.ok(deliveries.has(sharedKept.delivery));

      const events = await ids(db, 'events');
      for (const [name, x] of Object.entries(gone)) assert.ok(!events.has(x.event), `the event of ${name} has no delivery left: deleted`);
      for (const [name, x] of Object.entries(kept)) assert.ok(events.has(x.event), `the event of ${name} is kept`);
      assert.ok(events.has(shared.event), 'one of its deliveries remains');
      assert.ok(!events.has(lonelyOld), 'no delivery, past the succeeded retention');
      assert.ok(events.has(lonelyNew), 'no delivery, within the succeeded retention');

      assert.equal(await count(db, 'attempts WHERE delivery_id = $1', [gone.succeeded.delivery]), 0);
      assert.equal(await count(db, 'attempts WHERE delivery_id = $1', [kept.succeeded.delivery]), 3);

      // A second run finds nothing more.
      assert.deepEqual((await runOnce(db, clock)).retention, { deliveries: 0, attempts: 0, events: 0, more: false });
      // Time passes: the shared event goes with its last delivery.
      clock.advance(51 * DAY);
      await runOnce(db, clock);
      assert.ok(!(await ids(db, 'events')).has(shared.event));
      assert.ok((await ids(db, 'deliveries')).has(kept.pending.delivery), 'pending is never deleted');
    });

    test('a backlog larger than a run\u2019s budget is deleted in batches over several runs', async () => {
      await fresh();
      const account = await f.account();
      const endpoints = [await f.endpoint(account), await f.endpoint(account), await f.endpoint(account)];
      for (let i = 0; i < 23; i++) {
        const event = await f.event(account, 40);
        await f.delivery({ accountId: account, eventId: event, endpointId: endpoints[i % 3]!, state: 'succeeded', createdDaysAgo: 40, updatedDaysAgo: 40 });
      }
      const pending = await f.event(account, 40);
      await f.delivery({ accountId: account, eventId: pending, endpointId: endpoints[0]!, state: 'pending', createdDaysAgo: 40, updatedDaysAgo: 40 });
      const maintainer = maintainerOf(db, clock, { tuning: { batchSize: 5, batchesPerRun: 2 } });
      after(() => maintainer.stop());
      const first = await maintainer.runOnce();
      assert.deepEqual(first.retention, { deliveries: 10, attempts: 0, events: 10, more: true }, 'two batches of five');
      const second = await maintainer.runOnce();
      assert.equal(second.retention?.deliveries, 10);
      let runs = 2;
      while ((await maintainer.runOnce()).retention?.more && runs < 10) runs += 1;
      assert.ok(runs < 10, 'caught up');
      assert.equal(await count(db, 'deliveries'), 1, 'only the pending one is left');
      assert.equal(await count(db, 'events'), 1);
      await maintainer.stop();
    });

    test('pruning keeps the newest 100 attempts of each endpoint, whichever process wrote them', async () => {
      await fresh();
      const account = await f.account();
      const busy = await f.endpoint(account);
      const quietOne = await f.endpoint(account);
      // Another process's connection pool, on PostgreSQL; the embedded engine has one process.
      const second = db.url ? await openPostgres({ connectionString: db.url, max: 1 }) : db;
      try {
        await f.attempts(db, { accountId: account, endpointId: busy, n: 70, startDaysAgo: 1 });
        await f.attempts(second, { accountId: account, endpointId: busy, n: 60, startDaysAgo: 0 });
        await f.attempts(second, { accountId: account, endpointId: quietOne, n: 40 });
      } finally {
        if (second !== db) await second.close();
      }
      assert.equal(await count(db, 'attempt_log_grown'), 3, 'each inserting statement noted its endpoint');
      const report = await runOnce(db, clock);
      assert.equal(report.prunedAttempts, 30);
      assert.equal(await count(db, 'attempts WHERE endpoint_id = $1', [busy]), 100);
      assert.equal(await count(db, 'attempts WHERE endpoint_id = $1', [quietOne]), 40);
      // The newest were kept: all 60 of the second process's, and the newest 40 of the first's.
      assert.equal(await count(db, 'attempts WHERE endpoint_id = $1 AND started_at >= $2', [busy, f.ago(0.5)]), 60);
      assert.equal(await count(db, 'attempt_log_grown'), 0, 'the list was taken');
      assert.equal((await runOnce(db, clock)).prunedAttempts, 0);
    });

    test('a prune starts a little behind where the last one cut; an attempt written later than that waits for the full prune', async () => {
      await fresh();
      const account = await f.account();
      const endpoint = await f.endpoint(account);
      const maintainer = maintainerOf(db, clock, { tuning: { fullPruneMs: 3_600_000 } });
      await f.attempts(db, { accountId: account, endpointId: endpoint, n: 110 });
      assert.equal((await maintainer.runOnce()).prunedAttempts, 10);
      // One that started a day before the oldest kept, logged only now.
      await f.attempts(db, { accountId: account, endpointId: endpoint, n: 1, startDaysAgo: 1 });
      await f.attempts(db, { accountId: account, endpointId: endpoint, n: 1, startDaysAgo: -0.001 });
      assert.equal((await maintainer.runOnce()).prunedAttempts, 1, 'the oldest kept before goes; the late one is behind the cut-off');
      assert.equal(await count(db, 'attempts WHERE endpoint_id = $1', [endpoint]), 101);
      // The leader's full prune (once a minute) takes it, and so does a new
      // leader, which remembers no cut-off: it prunes whole logs.
      await maintainer.stop();
      await f.attempts(db, { accountId: account, endpointId: endpoint, n: 1, startDaysAgo: -0.002 });
      assert.equal((await runOnce(db, clock)).prunedAttempts, 2);
      assert.equal(await count(db, 'attempts WHERE endpoint_id = $1', [endpoint]), 100);
      assert.equal(await count(db, 'attempts WHERE endpoint_id = $1 AND started_at < $2', [endpoint, f.ago(0.5)]), 0, 'the late one went');
    });

    test('expired idempotency keys and ended sessions are swept', async () => {
      await fresh();
      const account = await f.account();
      const key = (name: string, hoursAgo: number) =>
        db.query(`INSERT INTO idempotency_keys (account_id, key, request_hash, created_at) VALUES ($1, $2, '\\x00', $3)`, [
          account,
          name,
          new Date(clock.now().getTime() - hoursAgo * 3_600_000),
        ]);
      await key('old', 24.01);
      await key('young', 23.99);
      const user = randomUUID();
      await db.query(`INSERT INTO users (id, account_id, email, name, password_hash) VALUES ($1, $2, $3, 'Ada', 'x')`, [user, account, `${user}@example.com`]);
      const session = (id: string, lastSeenHoursAgo: number, expiresInHours: number) =>
        db.query(`INSERT INTO sessions (id, user_id, token_hash, created_at, last_seen_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)`, [
          id,
          user,
          Buffer.from(id),
          new Date(clock.now().getTime() - DAY),
          new Date(clock.now().getTime() - lastSeenHoursAgo * 3_600_000),
          new Date(clock.now().getTime() + expiresInHours * 3_600_000),
        ]);
      const idle = randomUUID();
      const expired = randomUUID();
      const live = randomUUID();
      await session(idle, 8.01, 24);
      await session(expired, 0.1, -0.01);
      await session(live, 7.99, 24);
      const report = await runOnce(db, clock);
      assert.equal(report.sweptIdempotencyKeys, 1);
      assert.equal(report.sweptSessions, 2);
      assert.deepEqual([...(await db.query<{ key: string }>('SELECT key FROM idempotency_keys')).rows.map((r) => r.key)], ['young']);
      assert.deepEqual([...(await ids(db, 'sessions'))], [live]);
    });

    test('a newer Herald\u2019s migration stops the maintainer and calls back once', async () => {
      await fresh();
      let calls = 0;
      const maintainer = maintainerOf(db, clock, { onSchemaTooNew: () => (calls += 1) });
      assert.deepEqual((await maintainer.runOnce()).schemaKnown, true);
      await db.query(`INSERT INTO herald_migrations (version, name) VALUES (9999, 'from_the_future')`);
      try {
        const report = await maintainer.runOnce();
        assert.equal(report.schemaKnown, false);
        assert.equal(report.leader, false, 'it no longer leads');
        assert.equal(report.retention, undefined, 'and maintains nothing');
        await maintainer.runOnce();
        assert.equal(calls, 1, 'called back once');
      } finally {
        await db.query('DELETE FROM herald_migrations WHERE version = 9999');
        await maintainer.stop();
      }
    });
  });
}

describe('one maintainer leads at a time [postgres]', { skip: !ENGINES.includes('postgres') }, () => {
  let db: TestDb;
  const others: Db[] = [];
  before(async () => {
    db = await createTestDb('postgres');
  });
  after(async () => {
    for (const o of others) await o.close();
    await db?.close();
  });

  test('of two processes one leads; the other takes over when it stops, or when its connection is lost', async () => {
    const clock = createTestClock();
    const secondDb = await openPostgres({ connectionString: db.url!, max: 2 });
    others.push(secondDb);
    const first = maintainerOf(db, clock);
    const second = maintainerOf(secondDb, clock);
    const a = await first.runOnce();
    assert.equal(a.leader, true);
    assert.ok(a.retention, 'the leader maintains');
    const b = await second.runOnce();
    assert.equal(b.leader, false);
    assert.equal(b.retention, undefined, 'the other does not');
    assert.equal(b.schemaKnown, true, 'but it checks the schema');

    // The leader stops: the other takes over at its next run.
    await first.stop();
    assert.equal((await second.runOnce()).leader, true);

    // The leader's lock connection dies: its lead goes with it.
    const third = maintainerOf(db, clock);
    assert.equal((await third.runOnce()).leader, false);
    // Waits (up to 5 s) for that connection's backend to end.
    await db.query(`SELECT pg_terminate_backend(pid, 5000) FROM pg_locks WHERE locktype = 'advisory' AND objid = $1 AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`, [MAINTAINER_LOCK]);
    assert.equal((await third.runOnce()).leader, true, 'another process takes it');
    assert.equal((await second.runOnce()).leader, false, 'the first notices it lost the lock, and cannot take it back');
    await second.stop();
    await third.stop();
  });
});

describe('retention and a redelivery at the same time [postgres]', { skip: !ENGINES.includes('postgres') }, () => {
  let db: TestDb;
  before(async () => {
    db = await createTestDb('postgres');
  });
  after(async () => {
    await db?.close();
  });

  // A run that waited for the lock instead would never end here: the timeout fails it.
  test('an event being given a new delivery is not deleted for having none', { timeout: 20_000 }, async () => {
    const clock = createTestClock();
    const f = fixtures(db, clock);
    const account = await f.account();
    const endpoint = await f.endpoint(account);
    const event = await f.event(account, 40);
    const redelivery = new pg.Client({ connectionString: db.url });
    await redelivery.connect();
    try {
      // What redeliverEvent does, held open: the event locked, a delivery not yet committed.
      await redelivery.query('BEGIN');
      assert.ok(await getEventForNewDelivery({ query: async (text, params) => { const r = await redelivery.query(text, params as unknown[]); return { rows: r.rows, rowCount: r.rowCount ?? 0 }; } }, account, event));
      await redelivery.query(
        `INSERT INTO deliveries (id, account_id, event_id, endpoint_id, state, next_attempt_at, created_at, updated_at)
         VALUES (gen_random_uuid(), $1, $2, $3, 'pending', now(), now(), now())`,
        [account, event, endpoint],
      );
      const report = await runOnce(db, clock);
      assert.equal(report.retention?.events, 0, 'skipped while locked');
      await redelivery.query('COMMIT');
    } finally {
      await redelivery.end();
    }
    assert.ok((await ids(db, 'events')).has(event), 'the event stays with its new delivery');
    assert.equal((await runOnce(db, clock)).retention?.events, 0);
  });
});

describe('retention settings', () => {
  test('default to 30 and 90 days; whole days, at least 1; undelivered never shorter', () => {
    assert.deepEqual({ ...loadConfig().retention }, { succeededDays: 30, undeliveredDays: 90 });
    assert.deepEqual({ ...loadConfig({ env: { HERALD_RETENTION_DAYS: '7', HERALD_RETENTION_UNDELIVERED_DAYS: '7' } }).retention }, { succeededDays: 7, undeliveredDays: 7 });
    assert.deepEqual({ ...loadConfig({ env: { HERALD_RETENTION_DAYS: '120' } }).retention }, { succeededDays: 120, undeliveredDays: 120 }, 'unset, it follows');
    assert.throws(() => loadConfig({ env: { HERALD_RETENTION_DAYS: '0' } }), /HERALD_RETENTION_DAYS/);
    assert.throws(() => loadConfig({ env: { HERALD_RETENTION_DAYS: '1.5' } }), /HERALD_RETENTION_DAYS/);
    assert.throws(() => loadConfig({ env: { HERALD_RETENTION_UNDELIVERED_DAYS: '29' } }), /HERALD_RETENTION_UNDELIVERED_DAYS.*not be less than HERALD_RETENTION_DAYS/);
  });
});
