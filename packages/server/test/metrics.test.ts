import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { ENGINES } from './helpers/engines.ts';
import { alarmData, createTestHerald, type TestHerald } from './helpers/herald.ts';
import { assertProblem } from './helpers/problem.ts';
import { parseMetrics, sampleValue, type Sample } from './helpers/prometheus.ts';
import { startReceiver, type Receiver } from './helpers/receiver.ts';

const TOKEN = 'scrape-0123456789abcdef0123456789';

/** A loopback port nothing listens on: connections to it are refused. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return port;
}

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
