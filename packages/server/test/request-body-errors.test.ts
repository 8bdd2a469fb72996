import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../src/http/app.ts';
import { ENGINES } from './helpers/engines.ts';
import { alarmData, createTestHerald, type TestHerald } from './helpers/herald.ts';
import { assertProblem } from './helpers/problem.ts';

const LIMIT = 2048;

for (const engine of ENGINES) {
  describe(`bodies that are not JSON, too large or of another type are refused cleanly [${engine}]`, () => {
    let h: TestHerald;
    let small: FastifyInstance;

    before(async () => {
      h = await createTestHerald(engine);
      small = await buildApp({ ...h.deps, outbound: h.outbound, disableAfter: 20, maxBodyBytes: LIMIT, logLevel: 'silent' });
    });
    after(async () => {
      await small.close();
      await h.close();
    });

    async function send(app: FastifyInstance, url: string, payload: string | Buffer, contentType?: string) {
      const res = await app.inject({
        method: 'POST',
        url,
        payload,
        headers: { authorization: `Bearer ${h.apiKey}`, ...(contentType ? { 'content-type': contentType } : {}) },
      });
      return { status: res.statusCode, json: res.json(), headers: res.headers };
    }
    const count = async () => (await h.db.query<{ n: number }>('SELECT count(*)::int AS n FROM events')).rows[0]!.n;

    for (const [what, payload] of [
      ['truncated', '{"type": "alarm.created", "data": {'],
      ['single quotes', "{'type': 'alarm.created'}"],
      ['trailing comma', '{"type": "alarm.created",}'],
      ['not JSON at all', 'type=alarm.created'],
    ] as const) {
      test(`malformed JSON (${what}) is 400 malformed_json`, async () => {
        for (const url of ['/v1/events', '/v1/events/batch', '/v1/endpoints']) {
          assertProblem(await send(h.app, url, payload, 'application/json'), 'malformed_json');
        }
      });
    }

    test('an empty JSON body is 400 malformed_json', async () => {
      assertProblem(await send(h.app, '/v1/events', '', 'application/json'), 'malformed_json');
    });

    test('JSON that is not an object is a validation error on the body', async () => {
      for (const payload of ['[]', '"alarm.created"', '42', 'null']) {
        const res = await send(h.app, '/v1/events', payload, 'application/json');
        assert.equal(res.status, 400, payload);
        assert.equal(res.json.code, 'validation_failed', payload);
      }
    });

    test('a prototype-polluting key is refused', async () => {
      const res = await send(h.app, '/v1/endpoints', '{"__proto__": {"admin": true}, "url": "https://a.example.com/", "event_types": ["alarm.created"]}', 'application/json');
      assert.equal(res.status, 400);
      assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
      assert.equal(({} as Record<string, unknown>).admin, undefined);
    });

    test('a body over the limit is 413 payload_too_large, naming the limit, and nothing is stored', async () => {
      const before = await count();
      const big = JSON.stringify({ type: 'alarm.created', data: alarmData({ message: 'x'.repeat(LIMIT) }) });
      const res = await send(small, '/v1/events', big, 'application/json');
      assertProblem(res, 'payload_too_large');
      assert.match(res.json.detail, new RegExp(String(LIMIT)));
      const batch = JSON.stringify({ events: Array.from({ length: 20 }, () => ({ type: 'alarm.created', data: alarmData() })) });
      assertProblem(await send(small, '/v1/events/batch', batch, 'application/json'), 'payload_too_large');
      assert.equal(await count(), before);
    });

    test('a body just under the limit is accepted', async () => {
      const body = { type: 'alarm.created', data: alarmData() };
      const padding = LIMIT - Buffer.byteLength(JSON.stringify(body)) - 1;
      const payload = JSON.stringify({ ...body, data: { ...body.data, message: `${body.data.message}${'x'.repeat(padding)}` } });
      assert.ok(Buffer.byteLength(payload) <= LIMIT);
      const res = await send(small, '/v1/events', payload, 'application/json');
      assert.equal(res.status, 202, JSON.stringify(res.json));
    });

    test('the default limit is 1 MiB', async () => {
      const payload = JSON.stringify({ type: 'shipment.created', data: { id: 1, notes: 'x'.repeat(1024 * 1024) } });
      assertProblem(await send(h.app, '/v1/events', payload, 'application/json'), 'payload_too_large');
    });

    for (const contentType of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml', 'multipart/form-data; boundary=x']) {
      test(`a ${contentType.split(';')[0]} body is 415 unsupported_media_type`, async () => {
        const res = await send(h.app, '/v1/events', JSON.stringify({ type: 'shipment.created', data: { id: 1 } }), contentType);
        assertProblem(res, 'unsupported_media_type');
        assert.match(res.json.detail, /application\/json/);
      });
    }

    test('a body without a content type is 415', async () => {
      assertProblem(await send(h.app, '/v1/events', JSON.stringify({ type: 'shipment.created', data: { id: 1 } })), 'unsupported_media_type');
    });

    test('application/json with a charset is accepted', async () => {
      const res = await send(h.app, '/v1/events', JSON.stringify({ type: 'shipment.created', data: { id: 1 } }), 'application/json; charset=utf-8');
      assert.equal(res.status, 202);
    });

    test('a Content-Length that does not match the body is a 400 problem, not a crash', async () => {
      const res = await h.app.inject({
        method: 'POST',
        url: '/v1/events',
        payload: '{}',
        headers: { authorization: `Bearer ${h.apiKey}`, 'content-type': 'application/json', 'content-length': '10' },
      });
      assert.equal(res.statusCode, 400);
      assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
      assert.equal(res.json().code, 'validation_failed');
    });

    test('the server still answers normally after all of that', async () => {
      assert.equal((await h.api('GET', '/healthz')).status, 200);
      assert.equal((await h.api('GET', '/v1/endpoints')).status, 200);
    });
  });
}
