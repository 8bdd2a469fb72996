import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { BUILTIN_EVENT_TYPES } from '../src/core/event-types.ts';
import { loadMigrations, splitStatements } from '../src/storage/migrate.ts';
import { prepareDatabase } from '../src/storage/open.ts';
import { createTestDb, ENGINES } from './helpers/engines.ts';
import { createEmptyDb, type EmptyDb } from './helpers/fresh-db.ts';

const TABLES = ['accounts', 'api_keys', 'attempt_log_grown', 'attempts', 'claims_given_back', 'deliveries', 'encryption_key', 'endpoint_rates', 'endpoints', 'event_types', 'events', 'herald_migrations', 'idempotency_keys', 'in_flight', 'portal_sessions', 'replays', 'sessions', 'users'];

test('migration files are numbered 001, 002, … without gaps and split into statements', async () => {
  const migrations = await loadMigrations();
  assert.ok(migrations.length >= 1);
  assert.deepEqual(
    migrations.map((m) => m.version),
    migrations.map((_, i) => i + 1),
  );
  for (const m of migrations) {
    const statements = splitStatements(m.sql);
    assert.ok(statements.length > 0, `${m.name} has statements`);
    for (const s of statements) assert.ok(!s.includes('--'), 'comments are stripped');
  }
});

test("a function's dollar-quoted body keeps its semicolons; statements split at the semicolons outside it", () => {
  const sql = [
    '-- a comment; with a semicolon;',
    'CREATE INDEX i ON t (a);',
    'CREATE FUNCTION f(x int) RETURNS int LANGUAGE plpgsql AS $fn1$',
    'BEGIN',
    '  RETURN x + 1; -- inside',
    'END',
    '$fn1$;',
    'CREATE FUNCTION g() RETURNS text LANGUAGE sql AS $body$ SELECT $q$;$q$ $body$;',
    'DROP INDEX j;',
  ].join('\n');
  assert.deepEqual(splitStatements(sql), [
    'CREATE INDEX i ON t (a)',
    'CREATE FUNCTION f(x int) RETURNS int LANGUAGE plpgsql AS $fn1$\nBEGIN\n  RETURN x + 1; \nEND\n$fn1$',
    'CREATE FUNCTION g() RETURNS text LANGUAGE sql AS $body$ SELECT $q$;$q$ $body$',
    'DROP INDEX j',
  ]);
});

for (const engine of ENGINES) {
  describe(`migrations are applied once [${engine}]`, () => {
    let empty: EmptyDb;
    before(async () => {
      empty = await createEmptyDb(engine);
    });
    after(async () => {
      await empty.close();
    });

    test('the first run applies every migration, the second applies nothing and changes nothing', async () => {
      const all = (await loadMigrations()).map((m) => m.version);
      assert.deepEqual(await prepareDatabase(empty.db), all);

      const tables = await empty.db.query<{ table_name: string }>(
        `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name`,
      );
      assert.deepEqual(tables.rows.map((r) => r.table_name), TABLES);
      const types = await empty.db.query<{ name: string; builtin: boolean }>('SELECT name, builtin FROM event_types ORDER BY name');
      assert.deepEqual(
        types.rows,
        BUILTIN_EVENT_TYPES.map((t) => ({ name: t.name, builtin: true })).sort((a, b) => a.name.localeCompare(b.name)),
      );

      assert.deepEqual(await prepareDatabase(empty.db), []);
      const recorded = await empty.db.query<{ version: number }>('SELECT version FROM herald_migrations ORDER BY version');
      assert.deepEqual(recorded.rows.map((r) => r.version), all);
      assert.equal((await empty.db.query('SELECT name FROM event_types')).rowCount, BUILTIN_EVENT_TYPES.length);
    });

    test('a database made from the migrated template needs nothing', async () => {
      const db = await createTestDb(engine);
      try {
        assert.deepEqual(await prepareDatabase(db), []);
      } finally {
        await db.close();
      }
    });
  });

  describe(`concurrent migrate [${engine}]`, () => {
    let empty: EmptyDb;
    before(async () => {
      empty = await createEmptyDb(engine);
    });
    after(async () => {
      await empty.close();
    });

    test('two processes starting at once on an empty database apply each migration exactly once', async () => {
      // On PostgreSQL these are two pools (two sessions), as two Herald processes would be.
      const other = await empty.connect();
      const runs = await Promise.all([prepareDatabase(empty.db), prepareDatabase(other), prepareDatabase(other)]);
      const all = (await loadMigrations()).map((m) => m.version);
      assert.deepEqual(runs.flat().sort((a, b) => a - b), all, `applied once in all: ${JSON.stringify(runs)}`);
      // Which run applies which is left to the lock: each migration takes it
      // on its own, so one run may apply the first few and another the rest.
      const recorded = await empty.db.query<{ version: number }>('SELECT version FROM herald_migrations ORDER BY version');
      assert.deepEqual(recorded.rows.map((r) => r.version), all);
      assert.equal((await empty.db.query('SELECT name FROM event_types')).rowCount, BUILTIN_EVENT_TYPES.length);
    });
  });
}

for (const engine of ENGINES) {
  describe(`migration 009 over an attempt log written before it [${engine}]`, () => {
    let empty: EmptyDb;
    before(async () => {
      empty = await createEmptyDb(engine);
    });
    after(async () => {
      await empty.close();
    });

    test('attempts logged before keep their stored headers; the delivery index goes and the endpoint index carries the delivery id', async () => {
      // Held back: migrate() passes over a version it finds recorded.
      await empty.db.query(`CREATE TABLE herald_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
      await empty.db.query(`INSERT INTO herald_migrations (version, name) VALUES (9, 'held back')`);
      assert.ok(!(await prepareDatabase(empty.db)).includes(9));
      const headers = { 'Content-Type': 'application/json', 'X-Service-Signature': 'v1=' + 'cd'.repeat(32) };
      await empty.db.query(
        `INSERT INTO attempts (id, account_id, endpoint_id, delivery_id, event_id, event_type, attempt_number, started_at, duration_ms, outcome, request_headers)
         VALUES ('01890000-0000-7000-8000-0000000000a1', gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'alarm.created', 1, now(), 5, 'succeeded', $1)`,
        [JSON.stringify(headers)],
      );

      await empty.db.query('DELETE FROM herald_migrations WHERE version = 9');
      assert.deepEqual(await prepareDatabase(empty.db), [9]);
      const { rows } = await empty.db.query<{ request_headers: unknown; signature: string | null }>('SELECT request_headers, signature FROM attempts');
      assert.deepEqual(rows, [{ request_headers: headers, signature: null }]);
      const indexes = await empty.db.query<{ indexname: string; indexdef: string }>(`SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'attempts' ORDER BY indexname`);
      assert.deepEqual(indexes.rows.map((r) => r.indexname), ['attempts_endpoint_recent', 'attempts_pkey']);
      assert.match(indexes.rows[0]!.indexdef, /\(endpoint_id, started_at DESC, delivery_id\)/);
    });
  });

  describe(`migration 013 over deliveries leased before it [${engine}]`, () => {
    let empty: EmptyDb;
    before(async () => {
      empty = await createEmptyDb(engine);
    });
    after(async () => {
      await empty.close();
    });

    test('a delivery leased by an older Herald comes due when its lease ends; the lease columns go; the new claim takes what is due', async () => {
      await empty.db.query(`CREATE TABLE herald_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
      // 013 and every later migration held back (a later one may replace the function 013 creates).
      const later = (await loadMigrations()).map((m) => m.version).filter((v) => v >= 13);
      for (const v of later) await empty.db.query(`INSERT INTO herald_migrations (version, name) VALUES ($1, 'held back')`, [v]);
      assert.ok(!(await prepareDatabase(empty.db)).includes(13));
      await empty.db.query(`INSERT INTO accounts (id, name) VALUES ('01890000-0000-7000-8000-000000000001', 'Old Co')`);
      await empty.db.query(
        `INSERT INTO endpoints (id, account_id, url, origin, event_types, secret_encrypted, secret_hint)
         VALUES ('01890000-0000-7000-8000-000000000002', '01890000-0000-7000-8000-000000000001', 'https://old.example.com/hook', 'https://old.example.com', '{alarm.created}', '\\x00', 'x')`,
      );
      await empty.db.query(
        `INSERT INTO events (account_id, id, type, created_at, body, request_hash)
         VALUES ('01890000-0000-7000-8000-000000000001', '01890000-0000-7000-8000-000000000003', 'alarm.created', now(), '\\x7b7d', '\\x00')`,
      );
      // One in flight with an older worker (its lease runs for another minute), one due.
      await empty.db.query(
        `INSERT INTO deliveries (id, account_id, event_id, endpoint_id, state, attempts, next_attempt_at, lease_token, lease_until, created_at, updated_at)
         VALUES ('01890000-0000-7000-8000-0000000000d1', '01890000-0000-7000-8000-000000000001', '01890000-0000-7000-8000-000000000003',
                 '01890000-0000-7000-8000-000000000002', 'pending', 1, now() - interval '1 minute', 7, now() + interval '1 minute', now(), now()),
                ('01890000-0000-7000-8000-0000000000d2', '01890000-0000-7000-8000-000000000001', '01890000-0000-7000-8000-000000000003',
                 '01890000-0000-7000-8000-000000000002', 'pending', 0, now() - interval '1 minute', NULL, NULL, now(), now())`,
      );

      await empty.db.query('DELETE FROM herald_migrations WHERE version >= 13');
      assert.deepEqual(await prepareDatabase(empty.db), later);
      const { rows } = await empty.db.query<{ id: string; ahead: boolean; lost_attempts: number }>(
        `SELECT id, next_attempt_at > now() + interval '50 seconds' AS ahead, lost_attempts FROM deliveries ORDER BY id`,
      );
      assert.deepEqual(rows, [
        { id: '01890000-0000-7000-8000-0000000000d1', ahead: true, lost_attempts: 0 },
        { id: '01890000-0000-7000-8000-0000000000d2', ahead: false, lost_attempts: 0 },
      ]);
      const columns = await empty.db.query<{ column_name: string }>(`SELECT column_name FROM information_schema.columns WHERE table_name = 'deliveries' AND column_name LIKE 'lease%'`);
      assert.deepEqual(columns.rows, []);
      const claimed = await empty.db.query<{ id: string; attempt: number }>('SELECT id, attempt FROM herald_claim(NULL, 10, 60000, 4, 4)');
      assert.deepEqual(claimed.rows, [{ id: '01890000-0000-7000-8000-0000000000d2', attempt: 1 }]);
    });
  });
}
