import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { systemClock } from '../src/core/clock.ts';
import { createAccount } from '../src/services/accounts.ts';
import { createServiceDeps } from '../src/services/deps.ts';
import { createEndpoint } from '../src/services/endpoints.ts';
import { publishEvents } from '../src/services/events.ts';
import { createMetrics } from '../src/metrics/metrics.ts';
import type { Db } from '../src/storage/db.ts';
import { openStorage } from '../src/storage/open.ts';
import { BACKLOG_SQL, PENDING_COUNTED_UP_TO } from '../src/storage/queries/metrics.ts';
import { createTestDb, ENGINES, type TestDb } from './helpers/engines.ts';
import { within } from './helpers/faults.ts';
import { alarmData, createTestHerald, TEST_ADDRESSES, TEST_KEY, type TestHerald } from './helpers/herald.ts';
import { CLUSTER_AVAILABLE, startCluster, type Cluster } from './helpers/pg-cluster.ts';
import { startHeraldProcess, type HeraldProcess } from './helpers/process.ts';
import { assertProblem } from './helpers/problem.ts';
import { parseMetrics, sampleValue, type Sample } from './helpers/prometheus.ts';
import { startReceiver, type Receiver } from './helpers/receiver.ts';
import { closedPort } from './helpers/ports.ts';

const TOKEN = 'scrape-0123456789abcdef0123456789';


async function scrape(h: TestHerald, authorization = `Bearer ${TOKEN}`): Promise<{ samples: Sample[]; body: string }> {
  const res = await h.app.inject({ method: 'GET', url: '/metrics', headers: { authorization } });
  assert.equal(res.statusCode, 200, res.body);
  assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4/);
  return { samples: parseMetrics(res.body).samples, body: res.body };
}

for (const engine of ENGINES) {
  describe(`GET /metrics after real deliveries [${engine}]`, () => {
    let h: TestHerald;
    let ok: Receiver;
    let flaky: Receiver;
    const endpoints: string[] = [];

    before(async () => {
      h = await createTestHerald(engine, { metrics: { token: TOKEN, backlogCacheMs: 0 } });
      [ok, flaky] = await Promise.all([startReceiver(), startReceiver()]);
      // The first two requests fail with a 500, every later one succeeds.
      flaky.respond((_req, i) => ({ status: i < 2 ? 500 : 204 }));
      for (const r of [ok, flaky]) {
        const res = await h.api('POST', '/v1/endpoints', { url: `${r.url}/hooks?token=receiver-secret`, event_types: ['alarm.created'] });
        assert.equal(res.status, 201);
        endpoints.push(res.json.id);
      }
    });
    after(async () => {
      await h.close();
      await Promise.all([ok.close(), flaky.close()]);
    });

    test('the backlog before the dispatcher runs: pending deliveries, how overdue the oldest is, endpoints, the database', async () => {
      for (let i = 0; i < 2; i++) assert.equal((await h.api('POST', '/v1/events', { type: 'alarm.created', data: alarmData() })).status, 202);
      h.clock.advance(30_000);
      const { samples } = await scrape(h);
      assert.equal(sampleValue(samples, 'herald_events_published_total', { type: 'alarm.created' }), 2);
      assert.equal(sampleValue(samples, 'herald_deliveries_pending'), 4);
      const oldest = sampleValue(samples, 'herald_deliveries_oldest_pending_seconds')!;
      assert.ok(oldest >= 30 && oldest < 31, `oldest pending: ${oldest}`);
      assert.equal(sampleValue(samples, 'herald_endpoints', { state: 'enabled' }), 2);
      assert.equal(sampleValue(samples, 'herald_endpoints', { state: 'disabled' }), 0);
      assert.equal(sampleValue(samples, 'herald_database_up'), 1);
      assert.ok(sampleValue(samples, 'herald_database_pool_connections')! >= 1);
      assert.ok(sampleValue(samples, 'herald_database_pool_max_connections')! >= 1);
      assert.equal(sampleValue(samples, 'herald_delivery_attempts_total'), undefined, 'no attempt yet');
      // prom-client's process metrics, on Herald's own registry.
      assert.ok(sampleValue(samples, 'process_cpu_user_seconds_total')! > 0);
      assert.ok(sampleValue(samples, 'nodejs_heap_size_used_bytes')! > 0);
    });

    test('attempts by outcome and result, their durations, and publish-to-delivery time', async () => {
      await h.drain();
      assert.equal(ok.requests.length, 2);
      assert.equal(flaky.requests.length, 4);
      const { samples, body } = await scrape(h);
      assert.equal(sampleValue(samples, 'herald_delivery_attempts_total', { outcome: 'succeeded', result: '2xx' }), 4);
      assert.equal(sampleValue(samples, 'herald_delivery_attempts_total', { outcome: 'retrying', result: '5xx' }), 2);
      assert.equal(sampleValue(samples, 'herald_delivery_attempts_total'), 6);
      assert.equal(sampleValue(samples, 'herald_attempt_duration_seconds_count', { outcome: 'succeeded' }), 4);
      assert.equal(sampleValue(samples, 'herald_attempt_duration_seconds_count', { outcome: 'retrying' }), 2);
      assert.ok(sampleValue(samples, 'herald_attempt_duration_seconds_bucket', { outcome: 'succeeded', le: '10' })! === 4);
      // Two delivered at the first attempt, 30 s after publishing; two after a retry,
      // once the test clock had jumped past it (days later).
      assert.equal(sampleValue(samples, 'herald_publish_to_delivery_seconds_count'), 4);
      assert.equal(sampleValue(samples, 'herald_publish_to_delivery_seconds_bucket', { le: '10' }), 0);
      assert.equal(sampleValue(samples, 'herald_publish_to_delivery_seconds_bucket', { le: '60' }), 2);
      assert.equal(sampleValue(samples, 'herald_publish_to_delivery_seconds_bucket', { le: '+Inf' }), 4);
      assert.equal(sampleValue(samples, 'herald_deliveries_pending'), 0);
      assert.equal(sampleValue(samples, 'herald_deliveries_oldest_pending_seconds'), 0);
      // Off by default: no endpoint label, no account, no address.
      assert.ok(!samples.some((s) => 'endpoint' in s.labels), 'no endpoint label unless asked for');
      for (const secret of [h.accountId, ...endpoints, ok.url, 'receiver-secret', '127.0.0.1', h.apiKey]) assert.ok(!body.includes(secret), `the metrics name ${secret}`);
    });

    test('a replayed publish (same id and body) is not counted again', async () => {
      const event = { id: '0b7c1f5e-3a4d-4e2b-9c1a-8f6d2e7b5a90', type: 'alarm.created', data: alarmData() };
      const before = sampleValue((await scrape(h)).samples, 'herald_events_published_total')!;
      assert.equal((await h.api('POST', '/v1/events', event)).status, 202);
      assert.equal((await h.api('POST', '/v1/events', event)).json.duplicate, true);
      assert.equal(sampleValue((await scrape(h)).samples, 'herald_events_published_total'), before + 1);
      await h.drain();
    });

    test('the token: missing, wrong or malformed gets a 401 problem, never the metrics', async () => {
      for (const authorization of ['', `Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(0, -1)}`, `bearer ${TOKEN}`, `Basic ${TOKEN}`, `Bearer ${h.apiKey}`, 'Bearer \u00e9t\u00e9', `Bearer  ${TOKEN}`]) {
        const res = await h.app.inject({ method: 'GET', url: '/metrics', headers: authorization ? { authorization } : {} });
        assertProblem({ status: res.statusCode, json: res.json(), headers: res.headers }, 'unauthorized');
        assert.equal(res.headers['www-authenticate'], 'Bearer realm="herald-metrics"');
        assert.ok(!res.body.includes('herald_'), 'nothing of the metrics');
        assert.match(res.json().detail, /HERALD_METRICS_TOKEN/);
      }
    });

    test('/metrics is not in the API reference', async () => {
      const doc = (await h.app.inject({ method: 'GET', url: '/openapi.json' })).json();
      assert.equal(doc.paths['/metrics'], undefined);
    });
  });

  describe(`results, endpoint states and the opt-in endpoint label [${engine}]`, () => {
    let h: TestHerald;
    let gone: Receiver;
    let slow: Receiver;
    const ids: Record<string, string> = {};

    before(async () => {
      h = await createTestHerald(engine, { metrics: { endpointLabels: true, backlogCacheMs: 0 }, dispatcher: { disableAfter: 2 } });
      [gone, slow] = await Promise.all([startReceiver(), startReceiver()]);
      gone.respond({ status: 410 });
      slow.respond({ status: 429, headers: { 'retry-after': '120' } });
      const refused = `https://127.0.0.1:${await closedPort()}/hook`;
      for (const [name, url] of Object.entries({ gone: gone.url, slow: slow.url, refused })) {
        const res = await h.api('POST', '/v1/endpoints', { url, event_types: ['alarm.created'] });
        ids[name] = res.json.id;
      }
    });
    after(async () => {
      await h.close();
      await Promise.all([gone.close(), slow.close()]);
    });

    test('4xx fails at once, 429 retries and throttles, a refused connection retries; two failures in a row disable', async () => {
      for (let i = 0; i < 2; i++) await h.api('POST', '/v1/events', { type: 'alarm.created', data: alarmData() });
      for (let i = 0; i < 2; i++) await h.dispatcher.tick();
      const samples = parseMetrics(await h.metrics!.scrape()).samples;
      assert.equal(sampleValue(samples, 'herald_delivery_attempts_total', { outcome: 'failed', result: '4xx', endpoint: ids.gone! }), 2);
      assert.ok(sampleValue(samples, 'herald_delivery_attempts_total', { outcome: 'retrying', result: '429', endpoint: ids.slow! })! >= 1);
      assert.equal(sampleValue(samples, 'herald_delivery_attempts_total', { outcome: 'retrying', result: 'connection_refused', endpoint: ids.refused! }), 2);
      assert.ok(sampleValue(samples, 'herald_attempt_duration_seconds_count', { endpoint: ids.gone! })! === 2);
      assert.equal(sampleValue(samples, 'herald_endpoints_disabled_total'), 1);
      assert.equal(sampleValue(samples, 'herald_endpoints', { state: 'disabled' }), 1);
      assert.equal(sampleValue(samples, 'herald_endpoints', { state: 'throttled' }), 1);
      assert.equal(sampleValue(samples, 'herald_endpoints', { state: 'enabled' }), 1);
      // Nothing delivered, so no publish-to-delivery time.
      assert.equal(sampleValue(samples, 'herald_publish_to_delivery_seconds_count'), 0);
    });

    test('without HERALD_METRICS_TOKEN the API port has no /metrics, and says where to look', async () => {
      const res = await h.app.inject({ method: 'GET', url: '/metrics' });
      assertProblem({ status: res.statusCode, json: res.json(), headers: res.headers }, 'route_not_found');
      assert.match(res.json().detail, /HERALD_METRICS_TOKEN.*HERALD_METRICS_PORT/);
    });
  });
}

/** GET /metrics over HTTP, timed. */
async function fetchMetrics(url: string, token?: string) {
  const started = performance.now();
  const res = await fetch(url, { headers: token ? { authorization: `Bearer ${token}` } : {}, signal: AbortSignal.timeout(20_000) });
  const body = await res.text();
  return { status: res.status, headers: res.headers, body, ms: performance.now() - started };
}

/** Scrapes until `check` holds of the samples: each try is a real request, bounded by `ms` in all. */
async function scrapeUntil(url: string, token: string | undefined, check: (s: Sample[]) => boolean, ms = 15_000): Promise<Sample[]> {
  const deadline = performance.now() + ms;
  for (;;) {
    const res = await fetchMetrics(url, token);
    assert.equal(res.status, 200, res.body);
    const samples = parseMetrics(res.body).samples;
    if (check(samples)) return samples;
    if (performance.now() > deadline) throw new Error(`metrics never showed what was awaited:\n${res.body.split('\n').filter((l) => l.startsWith('herald_')).join('\n')}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

for (const engine of ENGINES) {
  describe(`a database that does not answer [${engine}]`, () => {
    let h: TestHerald;
    before(async () => {
      h = await createTestHerald(engine, { metrics: { token: TOKEN, backlogCacheMs: 0 } });
      await h.api('POST', '/v1/endpoints', { url: 'https://receiver.example.com/hook', event_types: ['alarm.created'] });
      await h.api('POST', '/v1/events', { type: 'alarm.created', data: alarmData() });
    });
    after(async () => {
      await h.close();
    });

    test('/metrics answers within the bound with herald_database_up 0 and the last backlog read, then recovers', { timeout: 30_000 }, async () => {
      assert.equal(sampleValue((await scrape(h)).samples, 'herald_database_up'), 1);
      // Frozen: the embedded engine's one connection held by a transaction
      // that does not end; PostgreSQL's deliveries table locked by another session.
      let thaw!: () => Promise<void>;
      if (engine === 'pglite') {
        let release!: () => void;
        const held = h.db.transaction(() => new Promise<void>((r) => (release = r)));
        thaw = async () => {
          release();
          await held;
        };
      } else {
        const locker = new pg.Client({ connectionString: (h.db as TestDb).url });
        await locker.connect();
        await locker.query('BEGIN');
        await locker.query('LOCK TABLE deliveries IN ACCESS EXCLUSIVE MODE');
        thaw = async () => {
          await locker.query('ROLLBACK');
          await locker.end();
        };
      }
      try {
        for (let i = 0; i < 2; i++) {
          const started = performance.now();
          const { samples } = await scrape(h);
          const ms = performance.now() - started;
          assert.ok(ms < 3_000, `answered in ${Math.round(ms)} ms`);
          assert.equal(sampleValue(samples, 'herald_database_up'), 0);
          assert.equal(sampleValue(samples, 'herald_deliveries_pending'), 1, 'the last value read');
          assert.ok(sampleValue(samples, 'process_cpu_user_seconds_total')! > 0, 'what needs no database is reported');
        }
      } finally {
        await thaw();
      }
      const samples = await within(
        (async () => {
          for (;;) {
            const { samples } = await scrape(h);
            if (sampleValue(samples, 'herald_database_up') === 1) return samples;
            await new Promise((r) => setTimeout(r, 50));
          }
        })(),
        10_000,
        'herald_database_up back to 1',
      );
      assert.equal(sampleValue(samples, 'herald_deliveries_pending'), 1);
    });

    test('scrapes within a few seconds of each other share one reading of the database', async () => {
      let readings = 0;
      // The real database, counting the readings that go through it.
      const counting: Db = {
        ...h.db,
        transaction: (fn) => {
          readings += 1;
          return h.db.transaction(fn);
        },
      };
      const metrics = createMetrics({ endpointLabels: false, db: counting });
      await Promise.all([metrics.scrape(), metrics.scrape()]);
      await metrics.scrape();
      assert.equal(readings, 1);
    });
  });

  describe(`the metrics port of a worker-only process [${engine}]`, () => {
    let receiver: Receiver;
    let worker: HeraldProcess | undefined;
    let dataDir: string | undefined;
    let testDb: TestDb | undefined;
    let env: Record<string, string>;

    before(async () => {
      receiver = await startReceiver();
      if (engine === 'pglite') {
        dataDir = mkdtempSync(join(tmpdir(), 'herald-metrics-'));
        env = { HERALD_DATA_DIR: dataDir };
      } else {
        testDb = await createTestDb('postgres');
        env = { DATABASE_URL: testDb.url!, HERALD_ENCRYPTION_KEY: TEST_KEY.toString('base64') };
      }
      // One event waiting for the worker, stored before it starts (the embedded database is one process's).
      const storage = await openStorage({ dataDir: dataDir ?? tmpdir(), databaseUrl: testDb?.url, encryptionKey: testDb ? TEST_KEY : undefined });
      try {
        const deps = createServiceDeps({ db: storage.db, encryptionKey: storage.encryptionKey, clock: systemClock, addresses: TEST_ADDRESSES });
        const accountId = (await createAccount(storage.db, 'Acme')).id;
        await createEndpoint(deps, accountId, { url: receiver.url, event_types: ['alarm.created'] });
        await publishEvents(deps, accountId, [{ type: 'alarm.created', data: alarmData() }], { batch: false });
      } finally {
        await storage.close();
      }
    });
    after(async () => {
      worker?.child.kill('SIGKILL');
      await worker?.exited;
      await receiver.close();
      await testDb?.close();
      if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    });

    test('herald start --role worker serves /metrics on HERALD_METRICS_PORT, behind the token, with its deliveries counted', { timeout: 60_000 }, async () => {
      worker = await startHeraldProcess(['--role', 'worker'], { ...env, HERALD_METRICS_PORT: '0', HERALD_METRICS_TOKEN: TOKEN, HERALD_POLL_MS: '100' });
      assert.equal(worker.url, undefined, 'no API');
      assert.ok(worker.metricsUrl, worker.stderr());
      await within(receiver.received(1), 15_000, 'the delivery');
      const samples = await scrapeUntil(worker.metricsUrl, TOKEN, (s) => sampleValue(s, 'herald_delivery_attempts_total', { outcome: 'succeeded' }) === 1);
      assert.equal(sampleValue(samples, 'herald_publish_to_delivery_seconds_count'), 1);
      assert.equal(sampleValue(samples, 'herald_database_up'), 1);
      assert.equal(sampleValue(samples, 'herald_endpoints', { state: 'enabled' }), 1);
      assert.equal(sampleValue(samples, 'herald_events_published_total'), undefined, 'a worker publishes nothing');

      const denied = await fetchMetrics(worker.metricsUrl, 'not-the-token-at-all');
      assert.equal(denied.status, 401);
      assert.equal(denied.headers.get('content-type'), 'application/problem+json; charset=utf-8');
      assert.equal(JSON.parse(denied.body).code, 'unauthorized');
      const elsewhere = await fetchMetrics(worker.metricsUrl.replace(/\/metrics$/, '/v1/events'), TOKEN);
      assert.equal(elsewhere.status, 404);
      assert.equal(JSON.parse(elsewhere.body).code, 'route_not_found');
    });
  });
}

describe('counting the backlog reads the deliveries_due index, never the table', { skip: !ENGINES.includes('postgres') && 'needs PostgreSQL (HERALD_TEST_DATABASE_URL)' }, () => {
  test('with most of a large table pending, the plan is index scans only', async () => {
    const db = await createTestDb('postgres');
    try {
      await db.query(`INSERT INTO accounts (id, name) VALUES ('00000000-0000-4000-8000-000000000001', 'a')`);
      await db.query(
        `INSERT INTO deliveries (id, account_id, event_id, endpoint_id, state, next_attempt_at, created_at, updated_at)
         SELECT gen_random_uuid(), '00000000-0000-4000-8000-000000000001', gen_random_uuid(), gen_random_uuid(),
                CASE WHEN i % 4 = 0 THEN 'succeeded' ELSE 'pending' END, now() - i * interval '1 s', now(), now()
           FROM generate_series(1, 50000) i`,
      );
      await db.query('ANALYZE deliveries');
      const { rows } = await db.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (FORMAT JSON) ${BACKLOG_SQL}`, [null, PENDING_COUNTED_UP_TO]);
      const scans: string[] = [];
      const walk = (node: { 'Node Type': string; 'Relation Name'?: string; 'Index Name'?: string; Plans?: unknown[] }) => {
        if (node['Relation Name'] === 'deliveries') scans.push(`${node['Node Type']} ${node['Index Name'] ?? ''}`.trim());
        for (const child of node.Plans ?? []) walk(child as typeof node);
      };
      walk((rows[0]!['QUERY PLAN'] as Array<{ Plan: Parameters<typeof walk>[0] }>)[0]!.Plan);
      assert.deepEqual(scans, ['Index Only Scan deliveries_due', 'Index Only Scan deliveries_due']);
    } finally {
      await db.close();
    }
  });
});

describe('the metrics port while PostgreSQL is stopped or frozen', { skip: !CLUSTER_AVAILABLE && 'needs PostgreSQL 15 binaries (initdb, pg_ctl)' }, () => {
  let cluster: Cluster;
  let worker: HeraldProcess | undefined;
  before(async () => {
    cluster = await startCluster();
  });
  after(async () => {
    worker?.child.kill('SIGKILL');
    await worker?.exited;
    await cluster?.remove();
  });

  test('answers 200 within the bound with herald_database_up 0, and 1 again once the database is back', { timeout: 90_000 }, async () => {
    worker = await startHeraldProcess(['--role', 'worker'], {
      DATABASE_URL: cluster.url,
      HERALD_ENCRYPTION_KEY: TEST_KEY.toString('base64'),
      HERALD_DATABASE_TIMEOUT_MS: '1500',
      HERALD_METRICS_PORT: '0',
      HERALD_LOG_LEVEL: 'silent',
    });
    const url = worker.metricsUrl!;
    await scrapeUntil(url, undefined, (s) => sampleValue(s, 'herald_database_up') === 1);
    for (const fault of ['stop', 'freeze'] as const) {
      if (fault === 'stop') await cluster.stop();
      else cluster.freeze();
      try {
        // Past the cache of the last good reading.
        const samples = await scrapeUntil(url, undefined, (s) => sampleValue(s, 'herald_database_up') === 0, 20_000);
        assert.ok(sampleValue(samples, 'herald_database_pool_max_connections')! > 0);
        const again = await fetchMetrics(url);
        assert.equal(again.status, 200);
        assert.ok(again.ms < 3_000, `${fault}: answered in ${Math.round(again.ms)} ms`);
      } finally {
        if (fault === 'stop') await cluster.start();
        else cluster.thaw();
      }
      await scrapeUntil(url, undefined, (s) => sampleValue(s, 'herald_database_up') === 1, 30_000);
    }
  });
});
