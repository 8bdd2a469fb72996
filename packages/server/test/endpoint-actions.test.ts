import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { verifySync } from '@herald/verify/node';
import { ENGINES } from './helpers/engines.ts';
import { alarmData, createTestHerald, type TestHerald } from './helpers/herald.ts';
import { startReceiver, type Receiver } from './helpers/receiver.ts';

for (const engine of ENGINES) {
  describe(`endpoint actions: rotate, test, disable, enable, recover [${engine}]`, () => {
    let h: TestHerald;
    let receiver: Receiver;
    let endpoint: { id: string; secret: string };

    before(async () => {
      h = await createTestHerald(engine, { dispatcher: { disableAfter: 3 } });
      receiver = await startReceiver();
    });
    after(async () => {
      await receiver.close();
      await h.close();
    });
    beforeEach(async () => {
      // Each test starts with one endpoint of its own: earlier ones would receive its events too.
      for (const e of (await h.api('GET', '/v1/endpoints?limit=100')).json.data) await h.api('DELETE', `/v1/endpoints/${e.id}`);
      receiver.respond({ status: 204 });
      const res = await h.api('POST', '/v1/endpoints', { url: receiver.url, event_types: ['alarm.created', 'shipment.created'] });
      assert.equal(res.status, 201);
      endpoint = res.json;
    });

    const now = () => h.clock.now();
    /** Verifies as the receiver would have, at the moment the request was signed. */
    const sentAt = (req: { headers: Record<string, unknown> }) => Number(req.headers['x-service-timestamp']);
    const publish = async (n = 1) => {
      for (let i = 0; i < n; i++) assert.equal((await h.api('POST', '/v1/events', { type: 'alarm.created', data: alarmData() })).status, 202);
    };

    test('rotate answers the new secret once; the very next attempt is signed with it and not with the old one', async () => {
      const rotated = await h.api('POST', `/v1/endpoints/${endpoint.id}/rotate-secret`);
      assert.equal(rotated.status, 200);
      assert.equal(rotated.headers['cache-control'], 'no-store');
      assert.match(rotated.json.secret, /^whsec_[A-Za-z0-9_-]{43}$/);
      assert.notEqual(rotated.json.secret, endpoint.secret);
      assert.equal(rotated.json.id, endpoint.id);
      const got = await h.api('GET', `/v1/endpoints/${endpoint.id}`);
      assert.ok(!JSON.stringify(got.json).includes(rotated.json.secret), 'the secret is shown once');
      assert.equal(got.json.secret_hint, rotated.json.secret_hint);

      const before = receiver.requests.length;
      await publish();
      await h.drain();
      const req = receiver.requests[before]!;
      assert.doesNotThrow(() => verifySync({ body: req.body, headers: req.headers, secret: rotated.json.secret, now: sentAt(req) }));
      assert.throws(() => verifySync({ body: req.body, headers: req.headers, secret: endpoint.secret, now: sentAt(req) }), /signature/i);
    });

    test('a test event is one signed webhook.test request; the answer comes back at once and lands in the log marked as a test', async () => {
      receiver.respond({ status: 200, body: 'thanks' });
      const before = receiver.requests.length;
      // At .999 of a second: the log rebuilds the timestamp from the start time,
      // and a rounded one would differ from the one signed and sent.
      h.clock.set(new Date(Math.floor(h.clock.now().getTime() / 1000) * 1000 + 1999));
      const res = await h.api('POST', `/v1/endpoints/${endpoint.id}/test`, {});
      assert.equal(res.status, 200);
      assert.equal(res.json.outcome, 'succeeded');
      assert.equal(res.json.status_code, 200);
      assert.equal(res.json.error, null);
      assert.equal(res.json.is_test, true);
      assert.equal(res.json.event_type, 'webhook.test');
      assert.equal(res.json.response_excerpt, 'thanks');
      assert.ok(res.json.duration_ms >= 0);

      assert.equal(receiver.requests.length, before + 1);
      const req = receiver.requests[before]!;
      assert.equal(req.headers['x-service-event'], 'webhook.test');
      assert.equal(req.headers['x-service-delivery-id'], res.json.id);
      assert.match(res.json.id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      verifySync({ body: req.body, headers: req.headers, secret: endpoint.secret, now: sentAt(req) });
      const body = JSON.parse(req.body.toString('utf8'));
      assert.equal(body.type, 'webhook.test');
      assert.equal(body.data.endpoint_id, endpoint.id);
      assert.equal(res.json.request.body, req.body.toString('utf8'));

      const log = await h.api('GET', `/v1/endpoints/${endpoint.id}/attempts`);
      assert.equal(log.json.data[0].id, res.json.id);
      assert.equal(log.json.data[0].is_test, true);
      // The log keeps the signature alone and rebuilds the rest: the answer
      // and the stored attempt both show every header as the receiver got it.
      const stored = await h.api('GET', `/v1/endpoints/${endpoint.id}/attempts/${res.json.id}`);
      const lower = (headers: Record<string, string>) => Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
      const received = Object.fromEntries(Object.keys(lower(res.json.request.headers)).map((k) => [k, req.headers[k]]));
      assert.equal(Object.keys(received).length, 7);
      assert.deepEqual(lower(res.json.request.headers), received);
      assert.deepEqual(lower(stored.json.request.headers), received);
      assert.equal(stored.json.request.body, req.body.toString('utf8'));
      const listed = await h.api('GET', `/v1/endpoints/${endpoint.id}`);
      assert.equal(listed.json.last_attempt.id, res.json.id);
    });

    test('a test can send the example record of a published type', async () => {
      const before = receiver.requests.length;
      const res = await h.api('POST', `/v1/endpoints/${endpoint.id}/test`, { event_type: 'shipment.created' });
      assert.equal(res.status, 200);
      assert.equal(res.json.event_type, 'shipment.created');
      const sent = JSON.parse(receiver.requests[before]!.body.toString('utf8'));
      const catalog = await h.api('GET', '/v1/event-types/shipment.created');
      assert.deepEqual(sent.data, catalog.json.example);

      const unknown = await h.api('POST', `/v1/endpoints/${endpoint.id}/test`, { event_type: 'parcel.teleported' });
      assert.equal(unknown.status, 400);
      assert.equal(unknown.json.code, 'unknown_event_type');
      assert.equal(unknown.json.errors[0].field, 'event_type');
    });

    test('a failed test is never retried and does not count toward disabling', async () => {
      receiver.respond({ status: 503 });
      for (let i = 0; i < 4; i++) {
        const res = await h.api('POST', `/v1/endpoints/${endpoint.id}/test`);
        assert.equal(res.json.outcome, 'failed');
        assert.equal(res.json.status_code, 503);
        assert.equal(res.json.error, 'HTTP 503');
      }
      const report = await h.drain();
      assert.equal(report.claimed, 0, 'nothing was queued for a retry');
      const got = await h.api('GET', `/v1/endpoints/${endpoint.id}`);
      assert.equal(got.json.state, 'enabled');
      assert.equal(got.json.failure_streak, 0);
    });

    test('a test reports a receiver that cannot be reached in words', async () => {
      const closed = await startReceiver();
      const url = closed.url;
      await closed.close();
      const patched = await h.api('PATCH', `/v1/endpoints/${endpoint.id}`, { url });
      assert.equal(patched.status, 200);
      const res = await h.api('POST', `/v1/endpoints/${endpoint.id}/test`);
      assert.equal(res.status, 200);
      assert.equal(res.json.outcome, 'failed');
      assert.equal(res.json.status_code, null);
      assert.equal(res.json.error, 'connection refused');
      assert.equal(res.json.request.url, url);
    });

    test('disabling by hand records the reason, skips pending deliveries and new events; a test still goes through', async () => {
      await publish(2);
      const disabled = await h.api('POST', `/v1/endpoints/${endpoint.id}/disable`, { reason: 'receiver under maintenance' });
      assert.equal(disabled.status, 200);
      assert.equal(disabled.json.state, 'disabled');
      assert.equal(disabled.json.disabled_reason, 'receiver under maintenance');
      assert.equal(disabled.json.disabled_at, now().toISOString());
      await publish(1);
      const before = receiver.requests.length;
      const report = await h.drain();
      assert.equal(report.succeeded, 0);
      assert.equal(receiver.requests.length, before, 'nothing is sent to a disabled endpoint');
      const dry = await h.api('POST', `/v1/endpoints/${endpoint.id}/recover`, { since: '2026-11-01T00:00:00Z', dry_run: true });
      assert.equal(dry.json.count, 3, 'two pending turned skipped, one new skipped');

      const test_ = await h.api('POST', `/v1/endpoints/${endpoint.id}/test`);
      assert.equal(test_.json.outcome, 'succeeded');
      assert.equal(receiver.requests.length, before + 1);
    });

    test('recovery: a dry run counts, a disabled endpoint refuses, re-enabling resets the streak, then skipped and failed deliveries since the time go out again', async () => {
      // Three permanent failures disable the endpoint (threshold 3 in this suite).
      receiver.respond({ status: 410 });
      await publish(3);
      await h.drain();
      const disabled = await h.api('GET', `/v1/endpoints/${endpoint.id}`);
      assert.equal(disabled.json.state, 'disabled');
      assert.equal(disabled.json.failure_streak, 3);
      assert.match(disabled.json.disabled_reason, /3 consecutive failed deliveries; the last: HTTP 410/);
      await publish(2); // skipped while disabled
      h.clock.advance(60_000);
      const cutoff = now().toISOString();
      h.clock.advance(60_000);
      await publish(1); // after the cutoff, skipped

      const all = await h.api('POST', `/v1/endpoints/${endpoint.id}/recover`, { since: '2026-11-01T00:00:00Z', dry_run: true });
      assert.deepEqual(all.json, { since: '2026-11-01T00:00:00.000Z', dry_run: true, count: 6 });
      const recent = await h.api('POST', `/v1/endpoints/${endpoint.id}/recover`, { since: cutoff, dry_run: true });
      assert.equal(recent.json.count, 1);

      const refused = await h.api('POST', `/v1/endpoints/${endpoint.id}/recover`, { since: '2026-11-01T00:00:00Z' });
      assert.equal(refused.status, 409);
      assert.equal(refused.json.code, 'endpoint_disabled');

      const enabled = await h.api('POST', `/v1/endpoints/${endpoint.id}/enable`);
      assert.equal(enabled.json.state, 'enabled');
      assert.equal(enabled.json.failure_streak, 0);
      assert.equal(enabled.json.disabled_reason, null);
      assert.equal(enabled.json.disabled_at, null);

      receiver.respond({ status: 200 });
      const before = receiver.requests.length;
      const done = await h.api('POST', `/v1/endpoints/${endpoint.id}/recover`, { since: '2026-11-01T00:00:00Z' });
      assert.equal(done.json.count, 6);
      assert.equal(done.json.dry_run, false);
      const report = await h.drain();
      assert.equal(report.succeeded, 6);
      assert.equal(receiver.requests.length, before + 6);
      const again = await h.api('POST', `/v1/endpoints/${endpoint.id}/recover`, { since: '2026-11-01T00:00:00Z', dry_run: true });
      assert.equal(again.json.count, 0, 'nothing left to recover');
    });

    test('recover names a bad or future time', async () => {
      for (const since of ['yesterday', '2026-11-20', '2026-13-01T00:00:00Z']) {
        const res = await h.api('POST', `/v1/endpoints/${endpoint.id}/recover`, { since, dry_run: true });
        assert.equal(res.status, 400, since);
        assert.equal(res.json.errors[0].field, 'since');
      }
      const future = await h.api('POST', `/v1/endpoints/${endpoint.id}/recover`, { since: '2099-01-01T00:00:00Z', dry_run: true });
      assert.equal(future.status, 400);
      assert.match(future.json.detail, /future/);
      const missing = await h.api('POST', `/v1/endpoints/${endpoint.id}/recover`, {});
      assert.equal(missing.status, 400);
      assert.equal(missing.json.errors[0].field, 'since');
    });

    test('every action on an endpoint of another account is the same 404 as on none', async () => {
      const other = await h.newAccount('Rival Inc');
      const actions: Array<[string, string, unknown]> = [
        ['POST', 'rotate-secret', undefined],
        ['POST', 'test', {}],
        ['POST', 'enable', undefined],
        ['POST', 'disable', {}],
        ['POST', 'recover', { since: '2026-11-01T00:00:00Z', dry_run: true }],
        ['GET', 'attempts', undefined],
      ];
      const before = receiver.requests.length;
      for (const [method, action, body] of actions) {
        const res = await h.api(method, `/v1/endpoints/${endpoint.id}/${action}`, body, other.apiKey);
        assert.equal(res.status, 404, action);
        assert.equal(res.json.code, 'not_found');
      }
      assert.equal(receiver.requests.length, before, 'no test was sent for the other account');
      const mine = await h.api('GET', `/v1/endpoints/${endpoint.id}`);
      assert.equal(mine.json.state, 'enabled');
      assert.equal(mine.json.secret_hint, endpoint.secret.slice(0, 10) + '…');
    });
  });
}
