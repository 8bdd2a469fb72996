import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { PassThrough } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { findTextFault, MAX_JSON_DEPTH, nestsDeeperThan, textFault } from '../src/core/input-text.ts';
import { buildApp } from '../src/http/app.ts';
import { ENGINES } from './helpers/engines.ts';
import { alarmData, createTestHerald, type TestHerald } from './helpers/herald.ts';
import { assertProblem } from './helpers/problem.ts';

/** `levels` arrays inside each other, around `inner`. */
const nested = (levels: number, inner = '1') => `${'['.repeat(levels)}${inner}${']'.repeat(levels)}`;

describe('what counts as text and how deep JSON may go', () => {
  test('NUL and lone surrogates are refused; everything else Unicode is text', () => {
    assert.match(textFault('a\u0000b')!, /NUL character \(U\+0000\)/);
    assert.match(textFault('\ud800')!, /lone surrogate/);
    assert.match(textFault('x\udc00y')!, /lone surrogate/);
    for (const ok of ['', 'Température 8 °C', '😀 a pair is fine', '\u0001\u001f\u007f\ufffd', 'line\nbreak']) assert.equal(textFault(ok), undefined, ok);
  });

  test('nesting is counted outside strings only, escapes included', () => {
    assert.equal(nestsDeeperThan(nested(MAX_JSON_DEPTH), MAX_JSON_DEPTH), false);
    assert.equal(nestsDeeperThan(nested(MAX_JSON_DEPTH + 1), MAX_JSON_DEPTH), true);
    assert.equal(nestsDeeperThan(JSON.stringify({ a: '[[[[[[[[[[{{{{{{' }), 3), false);
    assert.equal(nestsDeeperThan(JSON.stringify({ a: 'quote \\" then [[[[' }), 3), false);
    assert.equal(nestsDeeperThan(`{"a": "\\\\", "b": [[[[]]]]}`, 3), true);
  });

  test('a fault is found with the path of its field, in values and field names', () => {
    const text = '{"a": [1, {"b": "x\\u0000"}]}';
    assert.deepEqual(findTextFault(JSON.parse(text), text), { path: ['a', '1', 'b'], message: 'must not contain the NUL character (U+0000)' });
    const key = '{"a": {"\\ud800": 1}}';
    assert.deepEqual(findTextFault(JSON.parse(key), key)?.path, ['a']);
    assert.match(findTextFault(JSON.parse(key), key)!.message, /^has a field name that must be valid Unicode/);
    assert.equal(findTextFault({ a: 'fine' }, '{"a": "fine"}'), undefined);
  });
});

for (const engine of ENGINES) {
  describe(`no input reaches the database or a recursion unchecked [${engine}]`, () => {
    let h: TestHerald;
    before(async () => {
      h = await createTestHerald(engine);
    });
    after(async () => {
      await h.close();
    });
    const events = async () => (await h.db.query<{ n: number }>('SELECT count(*)::int AS n FROM events')).rows[0]!.n;
    const raw = async (method: 'GET' | 'POST', url: string, payload?: string | Buffer, auth = true) => {
      const res = await h.app.inject({
        method,
        url,
        payload,
        headers: { ...(auth ? { authorization: `Bearer ${h.apiKey}` } : {}), ...(payload !== undefined ? { 'content-type': 'application/json' } : {}) },
      });
      return { status: res.statusCode, json: res.json(), headers: res.headers };
    };

    test('a NUL in sign-in, before any credential, is a 400 naming the field', async () => {
      const res = await h.call('POST', '/v1/session', { body: { email: 'ada\u0000@acme.example', password: 'x' } });
      assertProblem(res, 'validation_failed', 'email');
      assert.match(res.json.errors[0].message, /NUL character \(U\+0000\)/);
    });

    test('a NUL or a lone surrogate in an endpoint field is a 400 naming it', async () => {
      const good = { url: 'https://a.example.com/hook', event_types: ['alarm.created'] };
      assertProblem(await h.api('POST', '/v1/endpoints', { ...good, description: 'a\u0000b' }), 'validation_failed', 'description');
      assertProblem(await raw('POST', '/v1/endpoints', '{"url": "https://a.example.com/", "event_types": ["alarm.created"], "description": "\\ud800"}'), 'validation_failed', 'description');
      assertProblem(await h.api('POST', '/v1/endpoints', { ...good, event_types: ['alarm.created', 'x\u0000'] }), 'validation_failed', 'event_types[1]');
    });

    test('event types and data: NUL anywhere, even deep in the data, is refused before anything is stored', async () => {
      const before = await events();
      assertProblem(await h.api('POST', '/v1/events', { type: 'alarm.created\u0000', data: alarmData() }), 'validation_failed', 'type');
      assertProblem(await h.api('POST', '/v1/events', { type: 'shipment.created', data: { id: 1, notes: { lines: ['ok', 'a\u0000'] } } }), 'validation_failed', 'data.notes.lines[1]');
      assertProblem(
        await h.api('POST', '/v1/events/batch', { events: [{ type: 'shipment.created', data: { id: 1 } }, { type: 'shipment.created', data: { id: 2, ['k\u0000']: 1 } }] }),
        'validation_failed',
        'events[1].data',
      );
      assertProblem(await raw('POST', '/v1/events', '{"type": "shipment.created", "data": {"id": "\\udfff"}}'), 'validation_failed', 'data.id');
      assert.equal(await events(), before);
    });

    test('query strings and path parameters are text too', async () => {
      assertProblem(await h.api('GET', '/v1/events?type=alarm.created%00'), 'validation_failed', 'query.type');
      assertProblem(await h.api('GET', '/v1/events?since=%00'), 'validation_failed', 'query.since');
      assertProblem(await h.api('GET', '/v1/endpoints?cursor=a%00'), 'validation_failed', 'query.cursor');
      assertProblem(await h.api('GET', '/v1/event-types/alarm.created%00'), 'validation_failed', 'name');
      assertProblem(await h.api('GET', '/v1/event-types/%ED%A0%80'), 'validation_failed', 'path');
    });

    test(`JSON nested deeper than ${MAX_JSON_DEPTH} levels is a 400 before it is parsed; as deep as that is accepted`, async () => {
      const before = await events();
      const deep = await raw('POST', '/v1/events', `{"type": "shipment.created", "data": {"id": 1, "x": ${nested(10_000)}}}`);
      assertProblem(deep, 'validation_failed', 'body');
      assert.match(deep.json.detail, new RegExp(`more than ${MAX_JSON_DEPTH} levels`));
      assertProblem(await raw('POST', '/v1/session', nested(100_000), false), 'validation_failed', 'body');
      assert.equal(await events(), before);
      // The body and data are two levels; the data's own nesting takes the rest.
      const deepest = await raw('POST', '/v1/events', `{"type": "shipment.created", "data": {"id": 1, "x": ${nested(MAX_JSON_DEPTH - 2)}}}`);
      assert.equal(deepest.status, 202, JSON.stringify(deepest.json));
    });

    test('a body that is not UTF-8 is malformed_json, not silently altered', async () => {
      const body = Buffer.concat([Buffer.from('{"type": "shipment.created", "data": {"id": "'), Buffer.from([0xff, 0xfe]), Buffer.from('"}}')]);
      const res = await raw('POST', '/v1/events', body);
      assertProblem(res, 'malformed_json');
      assert.match(res.json.detail, /UTF-8/);
    });

    test('a client error fastify raises names what it is about', async () => {
      const res = await h.api('GET', `/v1/endpoints/${'a'.repeat(200)}`);
      assertProblem(res, 'validation_failed', 'path');
      const length = await h.app.inject({ method: 'POST', url: '/v1/events', payload: '{}', headers: { authorization: `Bearer ${h.apiKey}`, 'content-type': 'application/json', 'content-length': '10' } });
      assertProblem({ status: length.statusCode, json: length.json(), headers: length.headers }, 'validation_failed', 'headers.content-length');
    });

    test('Herald still answers after all of that', async () => {
      assert.equal((await h.api('GET', '/healthz')).status, 200);
    });
  });
}

describe('answers from outside the routes are problems too', () => {
  let h: TestHerald;
  before(async () => {
    h = await createTestHerald('pglite');
  });
  after(async () => {
    await h.close();
  });

  /** Writes raw bytes to a listening app and reads until the server closes. */
  const exchange = (port: number, bytes: string) =>
    new Promise<string>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      let got = '';
      socket.on('data', (c) => (got += c.toString('latin1')));
      socket.on('error', reject);
      socket.on('close', () => resolve(got));
      socket.write(bytes);
    });
  const problemIn = (response: string) => {
    const [head, body] = response.split('\r\n\r\n') as [string, string];
    return { status: Number(head.split(' ')[1]), headers: { 'content-type': /content-type: (.*)/i.exec(head)?.[1] }, json: JSON.parse(body) };
  };

  test('a request that is not HTTP, or has an invalid header, gets a 400 problem', async () => {
    const app = await buildApp({ ...h.deps, outbound: h.outbound, disableAfter: 20, maxBodyBytes: 1024, logLevel: 'silent' });
    try {
      await app.listen({ port: 0, host: '127.0.0.1' });
      const port = (app.server.address() as { port: number }).port;
      assertProblem(problemIn(await exchange(port, 'HELLO\r\n\r\n')), 'validation_failed', 'request');
      assertProblem(problemIn(await exchange(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\u0000b\r\n\r\n')), 'validation_failed', 'request');
      assertProblem(problemIn(await exchange(port, `GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: ${'a'.repeat(20_000)}\r\n\r\n`)), 'headers_too_large');
    } finally {
      await app.close();
    }
  });

  test('a request that arrives while Herald is closing gets a 503 problem, and the one in flight finishes', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let started!: () => void;
    const inFlight = new Promise<void>((r) => (started = r));
    const db = {
      ...h.db,
      query: async (...args: Parameters<typeof h.db.query>) => {
        if (args[0] === 'SELECT 1') {
          started();
          await held;
        }
        return h.db.query(...args);
      },
    } as typeof h.db;
    const logStream = new PassThrough();
    let logs = '';
    const logged = (pattern: RegExp) =>
      new Promise<void>((resolve) => {
        const look = () => (pattern.test(logs) ? resolve() : logStream.once('data', look));
        look();
      });
    logStream.on('data', (c: Buffer) => (logs += c.toString()));
    const app: FastifyInstance = await buildApp({ ...h.deps, outbound: h.outbound, db, disableAfter: 20, maxBodyBytes: 1024, logLevel: 'info', logStream });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const port = (app.server.address() as { port: number }).port;
    // Two requests on one connection: the first waits in /healthz while the app starts closing.
    const socket = connect(port, '127.0.0.1');
    let got = '';
    socket.on('data', (c) => (got += c.toString('latin1')));
    const closed = new Promise((r) => socket.on('close', r));
    socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    await inFlight;
    const closing = app.close();
    socket.write('GET /v1/event-types HTTP/1.1\r\nHost: x\r\n\r\n');
    // The second request reaches the router (or fastify's own refusal) before the first finishes.
    await logged(/\/v1\/event-types|server is closing/);
    release();
    await closed;
    await closing;
    const answers = got.split(/(?=HTTP\/1\.1 )/);
    assert.equal(answers.length, 2, got);
    assert.match(answers[0]!, /^HTTP\/1\.1 200/);
    const second = problemIn(answers[1]!);
    assertProblem(second, 'shutting_down');
  });
});
