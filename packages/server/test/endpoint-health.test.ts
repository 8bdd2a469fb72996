import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ENGINES } from './helpers/engines.ts';
import { alarmData, createTestHerald, type TestHerald } from './helpers/herald.ts';
import { startReceiver, type Receiver } from './helpers/receiver.ts';

/**
 * What the panel's endpoint page shows about an endpoint's health: who
 * disabled it, what became of an attempt that was to be retried, and the
 * success rate per delivery and request latency over a window.
 */
for (const engine of ENGINES) {
  describe(`endpoint health: who disabled it, what became of retries, stats [${engine}]`, () => {
    let h: TestHerald;
    let receiver: Receiver;

    before(async () => {
      // Two failed deliveries in a row disable an endpoint; a 500 is retried once, a 400 never.
      h = await createTestHerald(engine, { dispatcher: { disableAfter: 2, retry: { baseMs: 1000, factor: 1, capMs: 1000, jitter: 0, maxRetries: 1 } } });
      receiver = await startReceiver();
    });
    after(async () => {
      await receiver.close();
      await h.close();
    });

    const newEndpoint = async () => (await h.api('POST', '/v1/endpoints', { url: receiver.url, event_types: ['alarm.created'] })).json as { id: string };
    const publish = async () => assert.equal((await h.api('POST', '/v1/events', { type: 'alarm.created', data: alarmData({ id: crypto.randomUUID() }) })).status, 202);

    test('a disable by hand records the API key that did it; re-enabling forgets it; Herald\u2019s own disable says automatic', async () => {
      const ep = await newEndpoint();
      const enabled = await h.api('GET', `/v1/endpoints/${ep.id}`);
      assert.equal(enabled.json.disabled_by, null);

      const key = await h.api('POST', '/v1/api-keys', { name: 'ops script' });
      const disabled = await h.api('POST', `/v1/endpoints/${ep.id}/disable`, { reason: 'receiver moving' }, key.json.key);
      assert.equal(disabled.status, 200);
      assert.equal(disabled.json.state, 'disabled');
      assert.equal(disabled.json.disabled_reason, 'receiver moving');
      assert.deepEqual(disabled.json.disabled_by, { type: 'api_key', id: key.json.id, name: `ops script (${key.json.prefix})` });
      assert.ok(!JSON.stringify(disabled.json).includes(key.json.key), 'the key itself is never shown');

      // Disabling again keeps the first author and time.
      const again = await h.api('POST', `/v1/endpoints/${ep.id}/disable`);
      assert.deepEqual(again.json.disabled_by, disabled.json.disabled_by);
      assert.equal(again.json.disabled_at, disabled.json.disabled_at);

      const reenabled = await h.api('POST', `/v1/endpoints/${ep.id}/enable`);
      assert.equal(reenabled.json.disabled_by, null);

      receiver.respond({ status: 400 });
      await publish();
      await publish();
      await h.drain({ advanceMs: 0 });
      const auto = await h.api('GET', `/v1/endpoints/${ep.id}`);
      assert.equal(auto.json.state, 'disabled');
      assert.deepEqual(auto.json.disabled_by, { type: 'automatic', id: null, name: null });
      assert.match(auto.json.disabled_reason, /^2 consecutive failed deliveries/);
      const listed = (await h.api('GET', '/v1/endpoints?limit=100')).json.data.find((e: { id: string }) => e.id === ep.id);
      assert.deepEqual(listed.disabled_by, auto.json.disabled_by);
    });

    test('an attempt that was to be retried says its delivery was skipped once the endpoint is disabled', async () => {
      const ep = await newEndpoint();
      receiver.respond({ status: 500 });
      await publish();
      await h.dispatcher.tick();
      let log = (await h.api('GET', `/v1/endpoints/${ep.id}/attempts`)).json.data;
      assert.equal(log.length, 1);
      assert.equal(log[0].outcome, 'retrying');
      assert.equal(log[0].delivery_state, 'pending', 'the retry is still to come');

      await h.api('POST', `/v1/endpoints/${ep.id}/disable`);
      log = (await h.api('GET', `/v1/endpoints/${ep.id}/attempts`)).json.data;
      assert.equal(log[0].outcome, 'retrying', 'the attempt itself is history');
      assert.equal(log[0].delivery_state, 'skipped', 'but its delivery will not be retried');
      const one = await h.api('GET', `/v1/endpoints/${ep.id}/attempts/${log[0].id}`);
      assert.equal(one.json.delivery_state, 'skipped');
      const summary = (await h.api('GET', `/v1/endpoints/${ep.id}`)).json.last_attempt;
      assert.equal(summary.delivery_state, 'skipped');

      // A test has no delivery.
      receiver.respond({ status: 204 });
      const sent = await h.api('POST', `/v1/endpoints/${ep.id}/test`);
      assert.equal(sent.json.delivery_state, null);
    });

    test('stats count each delivery once, leave tests out, and give latency percentiles over the window', async () => {
      const ep = await newEndpoint();
      const other = await newEndpoint();
      // Three deliveries succeed at once; one fails once and then succeeds; one is refused (400): failed.
      receiver.respond({ status: 204 });
      for (let i = 0; i < 3; i++) await publish();
      await h.drain({ advanceMs: 0 });
      receiver.respond({ status: 500 });
      await publish();
      await h.dispatcher.tick();
      receiver.respond({ status: 204 });
      await h.drain({ advanceMs: 1000 });
      receiver.respond({ status: 400 });
      await publish();
      await h.drain({ advanceMs: 0 });
      // Tests are not deliveries.
      await h.api('POST', `/v1/endpoints/${ep.id}/test`);

      const s = await h.api('GET', `/v1/endpoints/${ep.id}/stats?window=1h`);
      assert.equal(s.status, 200, JSON.stringify(s.json));
      assert.equal(s.json.window, '1h');
      // Every endpoint subscribed to alarm.created got these, each counted for itself.
      const d = s.json.deliveries;
      assert.equal(d.total, 5);
      assert.equal(d.succeeded, 4);
      assert.equal(d.failed, 1);
      assert.equal(s.json.success_rate, 0.8, 'per delivery: the retried one counts once, as a success');
      assert.equal(s.json.capped, false);
      assert.equal(s.json.buckets.length, 12);
      const summed = s.json.buckets.reduce((n: number, b: { succeeded: number; failed: number; pending: number; skipped: number }) => n + b.succeeded + b.failed + b.pending + b.skipped, 0);
      assert.equal(summed, 5);
      assert.equal(Date.parse(s.json.to) - Date.parse(s.json.from), 3_600_000);
      assert.ok(Date.parse(s.json.to) >= h.clock.now().getTime());
      // Six requests, the test left out.
      assert.equal(s.json.latency.requests, 6);
      for (const p of ['p50_ms', 'p95_ms', 'p99_ms', 'max_ms']) assert.equal(typeof s.json.latency[p], 'number', p);
      assert.ok(s.json.latency.p50_ms <= s.json.latency.p95_ms && s.json.latency.p95_ms <= s.json.latency.p99_ms && s.json.latency.p99_ms <= s.json.latency.max_ms);

      // A day later, the last hour is empty; the week still has them all.
      h.clock.advance(86_400_000);
      const later = await h.api('GET', `/v1/endpoints/${ep.id}/stats?window=1h`);
      assert.equal(later.json.deliveries.total, 0);
      assert.equal(later.json.success_rate, null);
      assert.equal(later.json.latency.requests, 0);
      assert.equal(later.json.latency.p50_ms, null);
      const week = await h.api('GET', `/v1/endpoints/${ep.id}/stats?window=7d`);
      assert.equal(week.json.deliveries.total, 5);
      assert.equal(week.json.buckets.length, 28);
      const day = await h.api('GET', `/v1/endpoints/${ep.id}/stats`);
      assert.equal(day.json.window, '24h', 'the default');
      assert.ok(other.id);
    });

    test('stats refuse an unknown window and another account\u2019s endpoint', async () => {
      const ep = await newEndpoint();
      const bad = await h.api('GET', `/v1/endpoints/${ep.id}/stats?window=30d`);
      assert.equal(bad.status, 400);
      assert.equal(bad.json.code, 'validation_failed');
      assert.match(JSON.stringify(bad.json), /window/);
      const stranger = await h.newAccount();
      const theirs = await h.api('GET', `/v1/endpoints/${ep.id}/stats`, undefined, stranger.apiKey);
      assert.equal(theirs.status, 404);
      const missing = await h.api('GET', `/v1/endpoints/${crypto.randomUUID()}/stats`);
      assert.equal(missing.status, 404);
    });
  });
}
