import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  CONTENT_TYPE,
  createTestRequest,
  HEADER,
  isKnownEvent,
  USER_AGENT,
  type Alarm,
} from '../src/index.ts';
import { BACKENDS, NOW } from './backends.ts';

const SECRET = 'whsec_test_secret';
const ALARM: Alarm = {
  id: '6f1c2a7e-9b3d-4e58-a1c4-2d7e8f9a0b1c',
  device_id: '0d8e4b2a-7c1f-4a36-9e5d-3b2c1a0f9e8d',
  shipment_id: 48213,
  type: 'temperature',
  severity: 'high',
  source: 'sensor',
  message: 'Temperature above 8 °C for 15 minutes',
  resolved: false,
  created_at: '2026-11-20T08:14:03.000Z',
  resolved_at: null,
};
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

test('a test request carries every header Herald sends, named and valued as Herald does', async () => {
  const request = await createTestRequest({
    secret: SECRET,
    type: 'alarm.created',
    data: ALARM,
    id: 'e0000000-0000-4000-8000-000000000001',
    deliveryId: 'd0000000-0000-4000-8000-000000000002',
    timestamp: NOW,
  });
  assert.equal(request.method, 'POST');
  assert.deepEqual(Object.keys(request.headers), [
    'Content-Type', 'User-Agent', 'X-Service-Event', 'X-Service-Event-ID', 'X-Service-Delivery-ID',
    'X-Service-Timestamp', 'X-Service-Signature',
  ]);
  assert.deepEqual(request.headers, {
    [HEADER.contentType]: 'application/json; charset=utf-8',
    [HEADER.userAgent]: 'Service-Webhooks/1.0',
    [HEADER.event]: 'alarm.created',
    [HEADER.eventId]: 'e0000000-0000-4000-8000-000000000001',
    [HEADER.deliveryId]: 'd0000000-0000-4000-8000-000000000002',
    [HEADER.timestamp]: String(NOW),
    [HEADER.signature]: request.headers[HEADER.signature],
  });
  assert.equal(CONTENT_TYPE, 'application/json; charset=utf-8');
  assert.equal(USER_AGENT, 'Service-Webhooks/1.0');
  assert.match(request.headers[HEADER.signature]!, /^v1=[0-9a-f]{64}$/);
});

test('the body is the compact envelope, keys in Herald\'s order, created_at from the timestamp', async () => {
  const request = await createTestRequest({ secret: SECRET, type: 'alarm.created', data: ALARM, id: 'e1', timestamp: NOW });
  assert.equal(
    request.body,
    `{"id":"e1","type":"alarm.created","created_at":"2023-11-14T22:13:20.000Z","data":${JSON.stringify(ALARM)}}`,
  );
  assert.deepEqual(request.event, JSON.parse(request.body));
});

for (const backend of BACKENDS) {
  test(`${backend.name}: a test request verifies, through a real Fetch Request too`, async () => {
    const request = await createTestRequest({ secret: SECRET, type: 'shipment.completed', data: { id: 48213, reference: 'PO-1' }, timestamp: NOW });
    const direct = await backend.verify({ body: request.body, headers: request.headers, secret: SECRET, now: NOW });
    assert.deepEqual(direct, request.event);

    const fetchRequest = new Request('https://receiver.example/webhooks/herald', request);
    const viaFetch = await backend.verify({
      body: await fetchRequest.text(),
      headers: fetchRequest.headers,
      secret: SECRET,
      now: NOW,
    });
    assert.ok(isKnownEvent(viaFetch) && viaFetch.type === 'shipment.completed');
    assert.equal(viaFetch.data.id, 48213);
  });
}

test('defaults: random UUIDs for the event and delivery ids, the event id in header and body, now as timestamp', async () => {
  const a = await createTestRequest({ secret: SECRET, type: 'webhook.test', data: { endpoint: 'x' } });
  const b = await createTestRequest({ secret: SECRET, type: 'webhook.test', data: { endpoint: 'x' } });
  assert.match(a.event.id, UUID);
  assert.match(a.headers[HEADER.deliveryId]!, UUID);
  assert.notEqual(a.event.id, b.event.id);
  assert.notEqual(a.headers[HEADER.deliveryId], b.headers[HEADER.deliveryId]);
  assert.notEqual(a.headers[HEADER.deliveryId], a.event.id);
  assert.equal(a.headers[HEADER.eventId], a.event.id);
  // Signed "now", so it verifies against the system clock.
  await BACKENDS[0]!.verify({ body: a.body, headers: a.headers, secret: SECRET });
});

test('timestamp may be a Date; a bad one is refused', async () => {
  const request = await createTestRequest({ secret: SECRET, type: 'x.y', data: {}, timestamp: new Date(NOW * 1000 + 999) });
  assert.equal(request.headers[HEADER.timestamp], String(NOW));
  await assert.rejects(createTestRequest({ secret: SECRET, type: 'x.y', data: {}, timestamp: Date.now() }), /milliseconds/);
  await assert.rejects(createTestRequest({ secret: '', type: 'x.y', data: {} }), TypeError);
  await assert.rejects(createTestRequest({ secret: SECRET, type: '', data: {} }), TypeError);
});

test('data is typed by event type (checked by tsc)', async () => {
  // @ts-expect-error an alarm needs its fields
  await createTestRequest({ secret: SECRET, type: 'alarm.created', data: { id: 'x' } });
  // @ts-expect-error a shipment needs an id
  await createTestRequest({ secret: SECRET, type: 'shipment.created', data: { reference: 'PO-1' } });
  // Unknown types take any data.
  await createTestRequest({ secret: SECRET, type: 'webhook.test', data: { anything: [1, 2, 3] } });
});
