import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { ERRORS, fieldPath, HeraldError, type ErrorCode } from '../src/errors.ts';
import { buildApp } from '../src/http/app.ts';
import { createServiceDeps } from '../src/services/deps.ts';
import { problemOf } from '../src/http/problem.ts';
import type { Db } from '../src/storage/db.ts';
import { ENGINES } from './helpers/engines.ts';
import { createTestHerald, TEST_ADDRESSES, TEST_KEY, type TestHerald } from './helpers/herald.ts';
import { assertProblem } from './helpers/problem.ts';

describe('the error table', () => {
  test('every code is snake_case, has an HTTP error status and a title, and renders as itself', () => {
    for (const [code, { status, title }] of Object.entries(ERRORS) as Array<[ErrorCode, (typeof ERRORS)[ErrorCode]]>) {
      assert.match(code, /^[a-z]+(_[a-z]+)*$/);
      assert.ok(status >= 400 && status < 600, code);
      assert.ok(title.length > 0, code);
      const problem = problemOf(code, 'detail');
      assert.deepEqual(problem, { type: `https://herald.dev/problems/${code}`, title, status, code, detail: 'detail' });
      const err = new HeraldError(code, 'what to do');
      assert.equal(err.status, status);
      assert.equal(err.code, code);
    }
  });

  test('field paths read like code: events[1].data.severity', () => {
    assert.equal(fieldPath(['events', '1', 'data', 'severity']), 'events[1].data.severity');
    assert.equal(fieldPath(['event_types', '0']), 'event_types[0]');
    assert.equal(fieldPath(['data', 'a~1b', 'c~0d']), 'data.a/b.c~d');
    assert.equal(fieldPath([]), '');
  });
});

for (const engine of ENGINES) {
  describe(`every error is application/problem+json with a stable code [${engine}]`, () => {
    let h: TestHerald;
    before(async () => {
      h = await createTestHerald(engine);
    });
    after(async () => {
      await h.close();
    });

    test('an unknown route is 404 route_not_found, with or without a key', async () => {
      assertProblem(await h.api('GET', '/v1/nothing-here'), 'route_not_found');
      const res = await h.app.inject({ method: 'GET', url: '/admin' });
      assertProblem({ status: res.statusCode, json: res.json(), headers: res.headers }, 'route_not_found');
    });

    test('a method a route does not have is a problem too', async () => {
      const res = await h.api('PUT', '/v1/endpoints', {});
      assertProblem(res, 'route_not_found');
      assert.match(res.json.detail, /PUT \/v1\/endpoints/);
    });

    test('a malformed %-escape in the path is a 400 problem, not fastify JSON', async () => {
      const res = await h.app.inject({ method: 'GET', url: '/v1/endpoints/%E0%A4%A', headers: { authorization: `Bearer ${h.apiKey}` } });
      assertProblem({ status: res.statusCode, json: res.json(), headers: res.headers }, 'validation_failed');
    });

    test('an over-long path parameter is a problem too', async () => {
      const res = await h.api('GET', `/v1/endpoints/${'a'.repeat(200)}`);
      assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
      assert.ok(res.status >= 400 && res.status < 500, String(res.status));
      assert.ok(res.json.code in ERRORS);
    });

    test('without a key, every /v1 route is 401 unauthorized', async () => {
      for (const [method, url] of [
        ['GET', '/v1/endpoints'],
        ['POST', '/v1/endpoints'],
        ['GET', '/v1/endpoints/00000000-0000-4000-8000-000000000000'],
        ['PATCH', '/v1/endpoints/00000000-0000-4000-8000-000000000000'],
        ['DELETE', '/v1/endpoints/00000000-0000-4000-8000-000000000000'],
        ['POST', '/v1/events'],
        ['POST', '/v1/events/batch'],
        ['GET', '/v1/events/00000000-0000-4000-8000-000000000000'],
        ['GET', '/v1/event-types'],
      ] as const) {
        const res = await h.app.inject({ method, url });
        assertProblem({ status: res.statusCode, json: res.json(), headers: res.headers }, 'unauthorized');
      }
    });

    test('/healthz needs no key and checks the database', async () => {
      const res = await h.app.inject({ method: 'GET', url: '/healthz' });
      assert.equal(res.statusCode, 200);
      assert.deepEqual(res.json(), { status: 'ok' });
    });
  });
}

describe('an unexpected failure', () => {
  test('is a 500 internal_error that hides the cause from the caller and logs it', async () => {
    const failing = {
      engine: 'pglite',
      query: async () => {
        throw new Error('connection to 10.0.0.5 lost: password authentication failed for user "herald"');
      },
    } as unknown as Db;
    const logs: Buffer[] = [];
    const logStream = new PassThrough();
    logStream.on('data', (c: Buffer) => logs.push(c));
    const app = await buildApp({
      ...createServiceDeps({ db: failing, encryptionKey: TEST_KEY, clock: () => new Date(), addresses: TEST_ADDRESSES }),
      outbound: { send: () => Promise.reject(new Error('this test sends nothing')) },
      disableAfter: 20,
      maxBodyBytes: 1024,
      logLevel: 'info',
      logStream,
    });
    try {
      const res = await app.inject({ method: 'GET', url: '/healthz' });
      assertProblem({ status: res.statusCode, json: res.json(), headers: res.headers }, 'internal_error');
      assert.ok(!res.body.includes('10.0.0.5'));
      assert.ok(!res.body.includes('password'));
      assert.match(Buffer.concat(logs).toString(), /connection to 10\.0\.0\.5 lost/);
    } finally {
      await app.close();
    }
  });
});
