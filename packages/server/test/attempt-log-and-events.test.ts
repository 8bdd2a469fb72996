import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ENGINES } from './helpers/engines.ts';
import { alarmData, createTestHerald, type TestHerald } from './helpers/herald.ts';
import { startReceiver, type Receiver } from './helpers/receiver.ts';

for (const engine of ENGINES) {
  describe(`the attempt log and the events API [${engine}]`, () => {
    let h: TestHerald;
    let receiver: Receiver;
    let endpoint: { id: string; url: string };
    const events: Array<{ id: string; type: string; created_at: string }> = [];

    before(async () => {
      h = await createTestHerald(engine, { dispatcher: { retry: { baseMs: 1, factor: 1, capMs: 1, jitter: 0, maxRetries: 2 } } });
      receiver = await startReceiver();
      endpoint = (await h.api('POST', '/v1/endpoints', { url: receiver.url, event_types: ['alarm.created', 'alarm.resolved'] })).json;
      // Every third request fails with 500 (and is retried), the rest answer 200 with a body.
      receiver.respond((_req, i) => (i % 3 === 2 ? { status: 500, body: 'x'.repeat(5000) } : { status: 200, body: `ok ${i}` }));
      for (let i = 0; i < 6; i++) {
        const type = i % 2 === 0 ? 'alarm.created' : 'alarm.resolved';
        const data = type === 'alarm.created' ? alarmData() : alarmData({ resolved: true, resolved_at: '2026-11-20T09:00:00.000Z' });
        const res = await h.api('POST', '/v1/events', { type, data });
        assert.equal(res.status, 202, JSON.stringify(res.json));
        events.push(res.json);
        h.clock.advance(1000);
      }
      await h.drain({ advanceMs: 10 });
    });
    after(async () => {
      await receiver.close();
      await h.close();
    });

    test('the log lists every attempt newest first with what a person needs to debug it', async () => {
      const log = await h.api('GET', `/v1/endpoints/${endpoint.id}/attempts?limit=100`);
      assert.equal(log.status, 200);
      assert.equal(log.json.data.length, receiver.requests.length);
      const times = log.json.data.map((a: { started_at: string }) => a.started_at);
      assert.deepEqual(times, [...times].sort().reverse(), 'newest first');
      const failed = log.json.data.find((a: { status_code: number }) => a.status_code === 500);
      assert.equal(failed.outcome, 'retrying');
      assert.equal(failed.error, 'HTTP 500');
      assert.equal(failed.response_excerpt.length, 4096, 'the first 4 KiB of the response');
      const succeeded = log.json.data.find((a: { status_code: number }) => a.status_code === 200);
      assert.match(succeeded.response_excerpt, /^ok \d+$/);
      assert.ok(events.some((e) => e.id === succeeded.event_id));
      assert.ok(['alarm.created', 'alarm.resolved'].includes(succeeded.event_type));
      assert.ok(succeeded.attempt_number >= 1);
      assert.equal(succeeded.is_test, false);
      assert.ok(succeeded.delivery_id);
    });

    test('failures only: ?outcome=retrying,failed; an unknown outcome is named', async () => {
      const failures = await h.api('GET', `/v1/endpoints/${endpoint.id}/attempts?outcome=retrying,failed`);
      assert.ok(failures.json.data.length > 0);
      assert.ok(failures.json.data.every((a: { outcome: string }) => a.outcome !== 'succeeded'));
      const bad = await h.api('GET', `/v1/endpoints/${endpoint.id}/attempts?outcome=broken`);
      assert.equal(bad.status, 400);
      assert.equal(bad.json.errors[0].field, 'query.outcome');
    });

    test('the log pages with a cursor, without gaps or repeats', async () => {
      const all = (await h.api('GET', `/v1/endpoints/${endpoint.id}/attempts?limit=100`)).json.data.map((a: { id: string }) => a.id);
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const page: { json: { data: Array<{ id: string }>; next_cursor: string | null } } = await h.api(
          'GET',
          `/v1/endpoints/${endpoint.id}/attempts?limit=2${cursor ? `&cursor=${cursor}` : ''}`,
        );
        seen.push(...page.json.data.map((a) => a.id));
        cursor = page.json.next_cursor;
      } while (cursor);
      assert.deepEqual(seen, all);
      const bad = await h.api('GET', `/v1/endpoints/${endpoint.id}/attempts?cursor=nonsense`);
      assert.equal(bad.status, 400);
      assert.equal(bad.json.errors[0].field, 'query.cursor');
    });

    test('one attempt shows the request exactly as sent: the headers with the signature, and the body', async () => {
      const [first] = (await h.api('GET', `/v1/endpoints/${endpoint.id}/attempts?limit=1`)).json.data;
      const detail = await h.api('GET', `/v1/endpoints/${endpoint.id}/attempts/${first.id}`);
      assert.equal(detail.status, 200);
      const sent = receiver.requests.find((r) => r.headers['x-service-delivery-id'] === first.id)!;
      assert.equal(detail.json.request.body, sent.body.toString('utf8'));
      assert.equal(detail.json.request.url, endpoint.url);
      assert.equal(detail.json.request.headers['X-Service-Signature'], sent.headers['x-service-signature']);
      assert.equal(detail.json.request.headers['X-Service-Timestamp'], sent.headers['x-service-timestamp']);
      // Every header as the receiver got it, no more and no fewer.
      const shown = Object.fromEntries(Object.entries(detail.json.request.headers as Record<string, string>).map(([k, v]) => [k.toLowerCase(), v]));
      assert.deepEqual(shown, Object.fromEntries(Object.keys(shown).map((k) => [k, sent.headers[k]])));
      assert.deepEqual(Object.keys(shown).sort(), ['content-type', 'user-agent', 'x-service-delivery-id', 'x-service-event', 'x-service-event-id', 'x-service-signature', 'x-service-timestamp']);
      const missing = await h.api('GET', `/v1/endpoints/${endpoint.id}/attempts/00000000-0000-4000-8000-000000000000`);
      assert.equal(missing.status, 404);
    });

    test('the endpoint list carries the newest attempt', async () => {
      const list = await h.api('GET', '/v1/endpoints');
      const [newest] = (await h.api('GET', `/v1/endpoints/${endpoint.id}/attempts?limit=1`)).json.data;
      assert.deepEqual(list.json.data[0].last_attempt, newest);
    });

    test('events list newest first, filter by type and time, and page with a cursor', async () => {
      const all = await h.api('GET', '/v1/events?limit=100');
      assert.deepEqual(
        all.json.data.map((e: { id: string }) => e.id),
        [...events].reverse().map((e) => e.id),
      );
      assert.equal(all.json.data[0].payload.id, events[5]!.id);
      const created = await h.api('GET', '/v1/events?type=alarm.created');
      assert.equal(created.json.data.length, 3);
      assert.ok(created.json.data.every((e: { type: string }) => e.type === 'alarm.created'));
      const window = await h.api('GET', `/v1/events?since=${events[1]!.created_at}&until=${events[4]!.created_at}`);
      assert.deepEqual(
        window.json.data.map((e: { id: string }) => e.id),
        [events[3]!.id, events[2]!.id, events[1]!.id],
      );
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const page: { json: { data: Array<{ id: string }>; next_cursor: string | null } } = await h.api('GET', `/v1/events?limit=4${cursor ? `&cursor=${cursor}` : ''}`);
        seen.push(...page.json.data.map((e) => e.id));
        cursor = page.json.next_cursor;
      } while (cursor);
      assert.equal(seen.length, 6);
      const bad = await h.api('GET', '/v1/events?since=yesterday');
      assert.equal(bad.status, 400);
      assert.equal(bad.json.errors[0].field, 'query.since');
    });

    test('an event shows its delivery to each endpoint with the attempts kept', async () => {
      const failedFirst = receiver.requests[2]!.headers['x-service-event-id'] as string;
      const res = await h.api('GET', `/v1/events/${failedFirst}`);
      assert.equal(res.status, 200);
      const [delivery] = res.json.deliveries;
      assert.equal(delivery.endpoint_id, endpoint.id);
      assert.equal(delivery.state, 'succeeded');
      assert.ok(delivery.attempt_log.length >= 2, 'the failed attempt and the retry');
      assert.deepEqual(
        delivery.attempt_log.map((a: { attempt_number: number }) => a.attempt_number),
        delivery.attempt_log.map((_: unknown, i: number) => i + 1),
      );
    });

    test('redeliver sends an event to an endpoint again; a later endpoint that subscribes can get it too', async () => {
      const event = events[0]!;
      const before = receiver.requests.length;
      const res = await h.api('POST', `/v1/events/${event.id}/redeliver`, { endpoint_id: endpoint.id });
      assert.equal(res.status, 202);
      assert.equal(res.json.state, 'pending');
      assert.equal(res.json.attempts, 0);
      await h.drain({ advanceMs: 10 });
      const again = receiver.requests.slice(before).filter((r) => r.headers['x-service-event-id'] === event.id);
      assert.ok(again.length >= 1);

      const late = await startReceiver();
      try {
        const second = (await h.api('POST', '/v1/endpoints', { url: late.url, event_types: ['alarm.created'] })).json;
        const backfill = await h.api('POST', `/v1/events/${event.id}/redeliver`, { endpoint_id: second.id });
        assert.equal(backfill.status, 202);
        // A new delivery: a time-ordered id stamped with the time of the redelivery (docs/decisions/0009).
        assert.match(backfill.json.id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
        assert.equal(parseInt(backfill.json.id.replaceAll('-', '').slice(0, 12), 16), h.clock.now().getTime());
        await h.drain({ advanceMs: 10 });
        assert.equal(late.requests.length, 1);
        assert.equal(late.requests[0]!.headers['x-service-event-id'], event.id);

        const resolved = events[1]!;
        const refused = await h.api('POST', `/v1/events/${resolved.id}/redeliver`, { endpoint_id: second.id });
        assert.equal(refused.status, 409);
        assert.equal(refused.json.code, 'not_subscribed');

        await h.api('POST', `/v1/endpoints/${second.id}/disable`);
        const disabled = await h.api('POST', `/v1/events/${event.id}/redeliver`, { endpoint_id: second.id });
        assert.equal(disabled.status, 409);
        assert.equal(disabled.json.code, 'endpoint_disabled');
        await h.api('DELETE', `/v1/endpoints/${second.id}`);
      } finally {
        await late.close();
      }
      const missing = await h.api('POST', '/v1/events/00000000-0000-4000-8000-000000000000/redeliver', { endpoint_id: endpoint.id });
      assert.equal(missing.status, 404);
    });

    test("another account sees none of it", async () => {
      const other = await h.newAccount('Rival Inc');
      const [attempt] = (await h.api('GET', `/v1/endpoints/${endpoint.id}/attempts?limit=1`)).json.data;
      for (const url of [`/v1/endpoints/${endpoint.id}/attempts`, `/v1/endpoints/${endpoint.id}/attempts/${attempt.id}`, `/v1/events/${events[0]!.id}`]) {
        const res = await h.api('GET', url, undefined, other.apiKey);
        assert.equal(res.status, 404, url);
      }
      assert.deepEqual((await h.api('GET', '/v1/events', undefined, other.apiKey)).json, { data: [], next_cursor: null });
      const redeliver = await h.api('POST', `/v1/events/${events[0]!.id}/redeliver`, { endpoint_id: endpoint.id }, other.apiKey);
      assert.equal(redeliver.status, 404);
    });

    test('the event type catalog: one type by name, with its schema and example; an unknown name is 404', async () => {
      const one = await h.api('GET', '/v1/event-types/alarm.resolved');
      assert.equal(one.status, 200);
      assert.equal(one.json.schema.properties.resolved.const, true);
      assert.equal(one.json.example.resolved, true);
      const none = await h.api('GET', '/v1/event-types/parcel.teleported');
      assert.equal(none.status, 404);
      assert.match(none.json.detail, /GET \/v1\/event-types/);
    });
  });
}

for (const engine of ENGINES) {
  describe(`the attempt log keeps the signature and rebuilds the headers [${engine}]`, () => {
    let h: TestHerald;
    const receivers: Receiver[] = [];
    const endpoints: Array<{ id: string; url: string }> = [];
    let event: { id: string };

    before(async () => {
      h = await createTestHerald(engine);
      for (let i = 0; i < 2; i++) {
        const receiver = await startReceiver();
        receivers.push(receiver);
        endpoints.push((await h.api('POST', '/v1/endpoints', { url: receiver.url, event_types: ['alarm.created'] })).json);
      }
      // Sent at .999 of a second: a timestamp rounded instead of cut to the
      // second would differ from the one signed and sent.
      h.clock.set(new Date('2026-11-20T09:00:07.999Z'));
      event = (await h.api('POST', '/v1/events', { type: 'alarm.created', data: alarmData() })).json;
      // Another event's attempts in the same endpoint logs, which the event's page must leave out.
      await h.api('POST', '/v1/events', { type: 'alarm.created', data: alarmData() });
      await h.drain({ advanceMs: 0 });
      for (const r of receivers) assert.equal(r.requests.length, 2);
    });
    const sentFor = (i: number) => receivers[i]!.requests.find((r) => r.headers['x-service-event-id'] === event.id)!;
    after(async () => {
      for (const r of receivers) await r.close();
      await h.close();
    });

    test("each endpoint's attempt shows every header exactly as its receiver got it; the row holds the signature alone", async () => {
      for (const [i, endpoint] of endpoints.entries()) {
        const sent = sentFor(i);
        assert.equal(sent.headers['x-service-timestamp'], '1795165207');
        const id = sent.headers['x-service-delivery-id'] as string;
        const detail = await h.api('GET', `/v1/endpoints/${endpoint.id}/attempts/${id}`);
        assert.equal(detail.status, 200);
        const shown = detail.json.request.headers as Record<string, string>;
        assert.deepEqual(Object.keys(shown).sort(), ['Content-Type', 'User-Agent', 'X-Service-Delivery-ID', 'X-Service-Event', 'X-Service-Event-ID', 'X-Service-Signature', 'X-Service-Timestamp'].sort());
        for (const [name, value] of Object.entries(shown)) assert.equal(value, sent.headers[name.toLowerCase()], name);
        const { rows } = await h.db.query<{ request_headers: unknown; signature: string }>('SELECT request_headers, signature FROM attempts WHERE id = $1', [id]);
        assert.deepEqual(rows, [{ request_headers: null, signature: sent.headers['x-service-signature'] }]);
      }
    });

    test("the event's page gives each delivery its own attempts, found in its endpoint's log", async () => {
      const page = await h.api('GET', `/v1/events/${event.id}`);
      assert.equal(page.status, 200);
      const byEndpoint = Object.fromEntries(
        page.json.deliveries.map((d: { endpoint_id: string; attempt_log: Array<{ id: string }> }) => [d.endpoint_id, d.attempt_log.map((a) => a.id)]),
      );
      assert.deepEqual(byEndpoint, Object.fromEntries(endpoints.map((e, i) => [e.id, [sentFor(i).headers['x-service-delivery-id']]])));
    });

    test('an attempt logged before migration 009 shows the headers it stored; a row with neither headers nor signature is refused', async () => {
      const endpoint = endpoints[0]!;
      // As an older Herald wrote it: every header as a JSON object, no signature column.
      const old = { 'Content-Type': 'application/json', 'X-Service-Signature': 'v1=' + 'ab'.repeat(32), 'X-Something-Older': 'kept as stored' };
      const id = '01890000-0000-7000-8000-000000000001';
      await h.db.query(
        `INSERT INTO attempts (id, account_id, endpoint_id, event_id, event_type, attempt_number, started_at, duration_ms, outcome, request_headers)
         VALUES ($1, $2, $3, $4, 'alarm.created', 1, $5, 5, 'succeeded', $6)`,
        [id, h.accountId, endpoint.id, event.id, h.clock.now(), JSON.stringify(old)],
      );
      const detail = await h.api('GET', `/v1/endpoints/${endpoint.id}/attempts/${id}`);
      assert.equal(detail.status, 200);
      assert.deepEqual(detail.json.request.headers, old);

      await assert.rejects(
        h.db.query(
          `INSERT INTO attempts (id, account_id, endpoint_id, event_id, event_type, attempt_number, started_at, duration_ms, outcome)
           VALUES ('01890000-0000-7000-8000-000000000002', $1, $2, $3, 'alarm.created', 1, $4, 5, 'succeeded')`,
          [h.accountId, endpoint.id, event.id, h.clock.now()],
        ),
        /attempts_headers_kept/,
      );
    });
  });
}
