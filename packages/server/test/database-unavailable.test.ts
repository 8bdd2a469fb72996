import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import pg from 'pg';
import { buildApp } from '../src/http/app.ts';
import { createServiceDeps } from '../src/services/deps.ts';
import { classifyDatabaseError, DatabaseUnavailableError, unavailableReason, type Db } from '../src/storage/db.ts';
import { openPostgres } from '../src/storage/postgres.ts';
import { ENGINES } from './helpers/engines.ts';
import { createTestHerald, TEST_ADDRESSES, TEST_KEY, type TestHerald } from './helpers/herald.ts';
import { assertProblem } from './helpers/problem.ts';
import { within } from './helpers/faults.ts';

const adminUrl = () => process.env.HERALD_TEST_DATABASE_URL!;

describe('which database errors mean "unavailable"', () => {
  const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code });
  test('SQLSTATEs of a lost, refusing, cancelled or read-only server; socket errors; the driver\u2019s own timeouts', () => {
    assert.equal(classifyDatabaseError(withCode('25006')), 'read_only');
    assert.equal(classifyDatabaseError(withCode('57014')), 'timeout');
    for (const code of ['08006', '08001', '57P01', '57P02', '57P03', '57P05', '53300', 'ECONNREFUSED', 'ECONNRESET', 'EPIPE']) {
      assert.equal(classifyDatabaseError(withCode(code)), 'unreachable', code);
    }
    assert.equal(classifyDatabaseError(new Error('Query read timeout')), 'timeout');
    assert.equal(classifyDatabaseError(new Error('timeout exceeded when trying to connect')), 'timeout');
    assert.equal(classifyDatabaseError(new Error('Connection terminated unexpectedly')), 'unreachable');
  });
  test('errors about the query or the data are not', () => {
    for (const code of ['23505', '42601', '22P02', '40001']) assert.equal(classifyDatabaseError(withCode(code, 'connection timeout in the text')), undefined, code);
    assert.equal(classifyDatabaseError(new TypeError('cannot read x')), undefined);
    assert.equal(classifyDatabaseError('a string'), undefined);
  });
  test('a wrapped error is found through its causes', () => {
    const err = new Error('publishing failed', { cause: new DatabaseUnavailableError('timeout', { cause: new Error('Query read timeout') }) });
    assert.equal(unavailableReason(err), 'timeout');
    assert.equal(unavailableReason(new Error('other')), undefined);
  });
});

describe('health routes without a database', () => {
  function appOn(db: Partial<Db>) {
    return buildApp({
      ...createServiceDeps({ db: { engine: 'postgres', ...db } as Db, encryptionKey: TEST_KEY, clock: () => new Date(), addresses: TEST_ADDRESSES }),
      outbound: { send: () => Promise.reject(new Error('this test sends nothing')) },
      disableAfter: 20,
      maxBodyBytes: 1024,
      logLevel: 'silent',
    });
  }

  test('/healthz is 200 without a query; /readyz and the API are 503 database_unavailable with Retry-After', async () => {
    let queries = 0;
    const app = await appOn({
      query: async () => {
        queries += 1;
        throw new DatabaseUnavailableError('unreachable', { cause: Object.assign(new Error('connect ECONNREFUSED 10.0.0.5:5432'), { code: 'ECONNREFUSED' }) });
      },
    });
    try {
      const health = await app.inject({ method: 'GET', url: '/healthz' });
      assert.equal(health.statusCode, 200);
      assert.deepEqual(health.json(), { status: 'ok' });
      assert.equal(queries, 0, '/healthz does not touch the database');
      for (const url of ['/readyz', '/v1/event-types']) {
        const res = await app.inject({ method: 'GET', url, headers: { authorization: `Bearer hk_abcdefgh_${'a'.repeat(32)}` } });
        assertProblem({ status: res.statusCode, json: res.json(), headers: res.headers }, 'database_unavailable');
        assert.equal(res.json().reason, 'unreachable');
        assert.equal(res.headers['retry-after'], '5');
        assert.ok(!res.body.includes('10.0.0.5'), 'the server\u2019s address stays in the log');
      }
    } finally {
      await app.close();
    }
  });

  test('/readyz gives up on a database that does not answer within 2 s', async () => {
    const app = await appOn({ query: () => new Promise(() => {}) });
    try {
      const started = performance.now();
      const res = await app.inject({ method: 'GET', url: '/readyz' });
      assertProblem({ status: res.statusCode, json: res.json(), headers: res.headers }, 'database_unavailable');
      assert.equal(res.json().reason, 'timeout');
      assert.ok(performance.now() - started < 4_000, 'bounded, not a hang');
    } finally {
      await app.close();
    }
  });
});

for (const engine of ENGINES) {
  describe(`a read-only database or an outdated schema (${engine})`, () => {
    let h: TestHerald;
    before(async () => {
      h = await createTestHerald(engine);
    });
    after(() => h.close());

    /** Makes the database refuse writes, as a standby or default_transaction_read_only does, until the returned function is called. */
    async function readOnly(): Promise<() => Promise<void>> {
      if (engine === 'pglite') {
        // One session, in this process: the setting applies at once.
        await h.db.exec('SET default_transaction_read_only = on');
        return () => h.db.exec('SET default_transaction_read_only = off');
      }
      const name = new URL(h.db.url!).pathname.slice(1);
      const admin = new pg.Client({ connectionString: adminUrl() });
      await admin.connect();
      // New sessions only: the test's pool is emptied so that it reconnects into the setting.
      const terminate = () => admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [name]);
      await admin.query(`ALTER DATABASE ${name} SET default_transaction_read_only = on`);
      await terminate();
      return async () => {
        await admin.query(`ALTER DATABASE ${name} RESET default_transaction_read_only`);
        await terminate();
        await admin.end();
      };
    }

    test('publishing is 503 database_unavailable (read_only), /readyz 503, /healthz 200; all well again after', async () => {
      assert.equal((await h.api('GET', '/readyz')).status, 200);
      const undo = await readOnly();
      try {
        let res = await h.api('POST', '/v1/events', { type: 'shipment.created', data: { id: 1 } });
        // A pooled connection the termination broke answers unreachable once; the next connects read-only.
        if (res.json.reason === 'unreachable') res = await h.api('POST', '/v1/events', { type: 'shipment.created', data: { id: 1 } });
        assertProblem(res, 'database_unavailable');
        assert.equal(res.json.reason, 'read_only');
        assert.equal(res.headers['retry-after'], '5');
        const ready = await h.api('GET', '/readyz');
        assertProblem(ready, 'database_unavailable');
        assert.equal(ready.json.reason, 'read_only');
        assert.equal((await h.api('GET', '/healthz')).status, 200);
      } finally {
        await undo();
      }
      let res = await h.api('POST', '/v1/events', { type: 'shipment.created', data: { id: 2 } });
      if (res.status === 503) res = await h.api('POST', '/v1/events', { type: 'shipment.created', data: { id: 2 } });
      assert.equal(res.status, 202);
      assert.equal((await h.api('GET', '/readyz')).status, 200);
    });

    test('/readyz is 503 when the schema is not the one this Herald knows', async () => {
      const { rows } = await h.db.query<{ version: number; name: string }>('SELECT version, name FROM herald_migrations ORDER BY version DESC LIMIT 1');
      const newest = rows[0]!;
      await h.db.query('DELETE FROM herald_migrations WHERE version = $1', [newest.version]);
      try {
        const res = await h.api('GET', '/readyz');
        assertProblem(res, 'database_unavailable');
        assert.equal(res.json.reason, 'schema_outdated');
      } finally {
        await h.db.query('INSERT INTO herald_migrations (version, name) VALUES ($1, $2)', [newest.version, newest.name]);
      }
      await h.db.query('INSERT INTO herald_migrations (version, name) VALUES ($1, $2)', [newest.version + 1, 'from_the_future']);
      try {
        const res = await h.api('GET', '/readyz');
        assert.equal(res.json.reason, 'schema_too_new');
      } finally {
        await h.db.query('DELETE FROM herald_migrations WHERE version = $1', [newest.version + 1]);
      }
      assert.equal((await h.api('GET', '/readyz')).status, 200);
    });

    test('a request with an Idempotency-Key whose key cannot be freed either is still a 503 problem that names no server', async () => {
      // The key is claimed; then the database goes away: the publish fails, and so does freeing the key.
      const real = h.db.query;
      let down = false;
      h.db.query = ((text: string, params?: readonly unknown[], options?: unknown) => {
        if (down) return Promise.reject(new DatabaseUnavailableError('unreachable', { cause: new Error('connect ECONNREFUSED 10.0.0.5:5432') }));
        if (/^\s*INSERT INTO idempotency_keys/.test(text)) down = true;
        return real.call(h.db, text, params, options as never);
      }) as Db['query'];
      let res;
      try {
        res = await h.api('POST', '/v1/events', { type: 'shipment.created', data: { id: 1 } }, undefined, { 'idempotency-key': 'outage-1' });
      } finally {
        h.db.query = real;
      }
      assertProblem(res, 'database_unavailable');
      assert.equal(res.json.reason, 'unreachable');
      assert.ok(!JSON.stringify(res.json).includes('10.0.0.5'), 'the server\u2019s address stays in the log');

      // The publish is stored, but its answer cannot be: a 503 problem too, so the client tries again.
      h.db.query = ((text: string, params?: readonly unknown[], options?: unknown) => {
        if (/^\s*UPDATE idempotency_keys/.test(text)) return Promise.reject(new DatabaseUnavailableError('timeout', { cause: new Error('Query read timeout') }));
        return real.call(h.db, text, params, options as never);
      }) as Db['query'];
      try {
        res = await h.api('POST', '/v1/events', { type: 'shipment.created', data: { id: 2 } }, undefined, { 'idempotency-key': 'outage-2' });
      } finally {
        h.db.query = real;
      }
      assertProblem(res, 'database_unavailable');
      assert.equal(res.json.reason, 'timeout');
    });
  });
}

describe('PostgreSQL connections that fail', { skip: !ENGINES.includes('postgres') && 'set HERALD_TEST_DATABASE_URL' }, () => {
  let admin: pg.Client;
  let db: Db;
  before(async () => {
    admin = new pg.Client({ connectionString: adminUrl() });
    await admin.connect();
    db = await openPostgres({ connectionString: adminUrl(), max: 2, timeoutMs: 500 });
  });
  after(async () => {
    await db?.close();
    await admin?.end();
  });
  const backend = async (q: { query: Db['query'] }) => (await q.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
  const terminate = (pid: number) => admin.query('SELECT pg_terminate_backend($1)', [pid]);

  test('a query past the timeout fails as unavailable (timeout), and its connection is closed, not reused', async () => {
    const pids = new Set<number>();
    const started = performance.now();
    await assert.rejects(
      db.transaction(async (tx) => {
        pids.add(await backend(tx));
        await tx.query('SELECT pg_sleep(5)');
      }),
      (err: unknown) => err instanceof DatabaseUnavailableError && err.reason === 'timeout',
    );
    assert.ok(performance.now() - started < 2_000);
    await assert.rejects(db.query('SELECT pg_sleep(5)'), (err: unknown) => unavailableReason(err) === 'timeout');
    // Both connections were dropped: the next ones are new backends.
    const next = await backend(db);
    assert.ok(!pids.has(next));
  });

  test('a connection terminated inside a transaction fails that transaction only; the process goes on', async () => {
    await assert.rejects(
      db.transaction(async (tx) => {
        await terminate(await backend(tx));
        // Statements with pauses between them: the error may land between two,
        // when the pool no longer listens on the checked-out connection.
        for (;;) {
          await tx.query('SELECT 1');
          await new Promise((r) => setTimeout(r, 5));
        }
      }),
      (err: unknown) => unavailableReason(err) === 'unreachable',
    );
    assert.equal((await db.query<{ one: number }>('SELECT 1 AS one')).rows[0]!.one, 1);
  });

  /** Resolves once `check` holds, looked at after each thing the listener hears. */
  function watcher() {
    const changed = new EventEmitter();
    return {
      saw: () => changed.emit('change'),
      until: (check: () => boolean, what: string) =>
        within(
          new Promise<void>((resolve) => {
            const look = () => {
              if (!check()) return;
              changed.off('change', look);
              resolve();
            };
            changed.on('change', look);
            look();
          }),
          5_000,
          what,
        ),
    };
  }
  const listenerPids = async (channel: string) =>
    (await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE query = $1', [`LISTEN "${channel}"`])).rows.map((r) => r.pid);

  test('LISTEN survives its connection being terminated: the caller hears it go and come back, and notifications flow again', async () => {
    const heard: string[] = [];
    const events: string[] = [];
    const w = watcher();
    const unlisten = await db.listen(
      'herald_test_channel',
      (payload) => (heard.push(payload), w.saw()),
      { onDown: () => (events.push('down'), w.saw()), onUp: () => (events.push('up'), w.saw()) },
    );
    try {
      for (let round = 0; round < 2; round++) {
        const pids = await listenerPids('herald_test_channel');
        assert.equal(pids.length, 1);
        await terminate(pids[0]!);
        await w.until(() => events.includes('up'), 'reconnected');
        assert.deepEqual(events, ['down', 'up']);
        events.length = 0;
        await admin.query(`NOTIFY herald_test_channel, 'after ${round}'`);
        await w.until(() => heard.includes(`after ${round}`), 'notification after reconnecting');
      }
      assert.deepEqual(heard, ['after 0', 'after 1'], 'with onUp, no made-up notification');
    } finally {
      await unlisten();
    }
    assert.deepEqual(await listenerPids('herald_test_channel'), [], 'unlisten closes its connection');
  });

  test('without hooks, a reconnection wakes the listener as a notification would', async () => {
    const heard: string[] = [];
    const w = watcher();
    const unlisten = await db.listen('herald_test_quiet', (payload) => (heard.push(payload), w.saw()));
    try {
      const pids = await listenerPids('herald_test_quiet');
      assert.equal(pids.length, 1);
      await terminate(pids[0]!);
      await w.until(() => heard.length > 0, 'woken after reconnecting');
      assert.deepEqual(heard, ['']);
    } finally {
      await unlisten();
    }
  });
});
