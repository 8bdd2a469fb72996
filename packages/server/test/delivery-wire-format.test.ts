import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ENGINES } from './helpers/engines.ts';
import { alarmData, createTestHerald, type TestHerald } from './helpers/herald.ts';
import { opensslSignature } from './helpers/independent-hmac.ts';
import { startReceiver, type Receiver } from './helpers/receiver.ts';

// Version 7 (time-ordered, RFC 9562): docs/decisions/0009.
const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

for (const engine of ENGINES) {
  describe(`wire format as receivers are promised it [${engine}]`, () => {
    let h: TestHerald;
    let receiver: Receiver;
    let secret: string;
    let endpointId: string;

    before(async () => {
      h = await createTestHerald(engine);
      receiver = await startReceiver();
      const res = await h.api('POST', '/v1/endpoints', { url: receiver.url, event_types: ['alarm.created'] });
      assert.equal(res.status, 201);
      secret = res.json.secret;
      endpointId = res.json.id;
    });
    after(async () => {
      await h.close();
      await receiver.close();
    });

    test('headers, content type, user agent and an OpenSSL-checked signature', async () => {
      const published = await h.api('POST', '/v1/events', { type: 'alarm.created', data: alarmData() });
      assert.equal(published.status, 202);
      const report = await h.dispatcher.tick();
      assert.equal(report.succeeded, 1);
      assert.equal(receiver.requests.length, 1);
      const req = receiver.requests[0]!;
      assert.equal(req.method, 'POST');
      assert.equal(req.path, '/webhooks');
      assert.equal(req.headers['content-type'], 'application/json; charset=utf-8');
      assert.equal(req.headers['user-agent'], 'Service-Webhooks/1.0');
      assert.equal(req.headers['x-service-event'], 'alarm.created');
      assert.equal(req.headers['x-service-event-id'], published.json.id);
      assert.match(String(req.headers['x-service-delivery-id']), UUID_V7);
      // Its first 48 bits are the attempt's start, in milliseconds.
      assert.equal(parseInt(String(req.headers['x-service-delivery-id']).replaceAll('-', '').slice(0, 12), 16), h.clock.now().getTime());
      assert.match(published.json.id, UUID_V7, 'an event id Herald chose');
      const ts = String(req.headers['x-service-timestamp']);
      assert.match(ts, /^\d+$/);
      assert.equal(Number(ts), Math.floor(h.clock.now().getTime() / 1000));
      assert.match(String(req.headers['x-service-signature']), /^v1=[0-9a-f]{64}$/);
      assert.equal(req.headers['x-service-signature'], opensslSignature(secret, ts, req.body));
      const envelope = JSON.parse(req.body.toString('utf8'));
      assert.deepEqual(Object.keys(envelope), ['id', 'type', 'created_at', 'data']);
      assert.equal(envelope.id, published.json.id);
      assert.equal(envelope.type, 'alarm.created');
      assert.match(envelope.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      assert.deepEqual(envelope.data, alarmData());
    });

    test('a retry carries the same body bytes and event id, a new delivery id and a fresh timestamp and signature', async () => {
      receiver.requests.length = 0;
      receiver.respond((_req, i) => (i === 0 ? { status: 503 } : { status: 200 }));
      await h.api('POST', '/v1/events', { type: 'alarm.created', data: alarmData({ message: 'retry me' }) });
      assert.equal((await h.dispatcher.tick()).retrying, 1);
      h.clock.advance(10 * 60_000);
      assert.equal((await h.dispatcher.tick()).succeeded, 1);
      const [first, second] = receiver.requests;
      assert.ok(first && second);
      assert.ok(first.body.equals(second.body), 'identical body bytes');
      assert.equal(first.headers['x-service-event-id'], second.headers['x-service-event-id']);
      assert.notEqual(first.headers['x-service-delivery-id'], second.headers['x-service-delivery-id']);
      assert.ok(Number(second.headers['x-service-timestamp']) >= Number(first.headers['x-service-timestamp']) + 60);
      assert.equal(second.headers['x-service-signature'], opensslSignature(secret, String(second.headers['x-service-timestamp']), second.body));
      const attempts = await h.db.query<{ id: string; attempt_number: number }>(
        'SELECT id, attempt_number FROM attempts WHERE endpoint_id = $1 AND event_id = $2 ORDER BY attempt_number',
        [endpointId, first.headers['x-service-event-id']],
      );
      assert.deepEqual(attempts.rows.map((a) => a.id), [first.headers['x-service-delivery-id'], second.headers['x-service-delivery-id']]);
      assert.deepEqual(attempts.rows.map((a) => a.attempt_number), [1, 2]);
    });
  });
}
