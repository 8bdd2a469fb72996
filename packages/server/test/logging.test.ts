import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { loadConfig } from '../src/config.ts';
import { startHerald, type Herald } from '../src/main.ts';
import { ENGINES } from './helpers/engines.ts';
import { alarmData, createTestHerald, TEST_KEY, type TestHerald } from './helpers/herald.ts';
import { startReceiver, type Receiver } from './helpers/receiver.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

type Line = Record<string, any>;
const lines = (text: string): Line[] => text.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Line);

for (const engine of ENGINES) {
  describe(`request ids [${engine}]`, () => {
    let h: TestHerald;
    before(async () => {
      h = await createTestHerald(engine);
    });
    after(async () => {
      await h.close();
    });

    test('a sane X-Request-Id is kept: in the answer and on every log line of its request', async () => {
      for (const id of ['req-7f3a9c', '0b7c1f5e-3a4d-4e2b-9c1a-8f6d2e7b5a90', 'Root=1-67891233-abcdef012345678912345678', 'a'.repeat(128), 'trace/ab+c=@d:e.f_g']) {
        const res = await h.api('GET', '/v1/event-types', undefined, undefined, { 'x-request-id': id });
        assert.equal(res.status, 200);
        assert.equal(res.headers['x-request-id'], id);
        const mine = lines(h.logs()).filter((l) => l.reqId === id);
        assert.deepEqual(mine.map((l) => l.msg), ['incoming request', 'request completed']);
      }
    });

    test('an id that is too long, empty or holds other characters is replaced by a new one', async () => {
      for (const id of ['a'.repeat(129), 'has space', '<script>', 'tab\tid', '"quoted"', 'é', 'a,b']) {
        const res = await h.call('GET', '/healthz', { headers: { 'x-request-id': id } });
        assert.match(String(res.headers['x-request-id']), UUID, JSON.stringify(id));
        assert.ok(!lines(h.logs()).some((l) => l.reqId === id), `no log line carries ${JSON.stringify(id)}`);
      }
    });

    test('every answer has one, errors and unknown routes included, and every request log line carries it', async () => {
      const answers = [
        await h.call('GET', '/healthz'),
        await h.call('GET', '/no/such/route'),
        await h.call('GET', '/v1/endpoints'),
        await h.api('POST', '/v1/events', { type: 'alarm.created', data: { broken: true } }),
      ];
      assert.deepEqual(answers.map((a) => a.status), [200, 404, 401, 400]);
      const ids = answers.map((a) => String(a.headers['x-request-id']));
      for (const id of ids) assert.match(id, UUID);
      assert.equal(new Set(ids).size, ids.length, 'one id per request');
      const logged = lines(h.logs());
      for (const l of logged.filter((l) => l.req || l.res)) assert.ok(typeof l.reqId === 'string' && l.reqId.length > 0, JSON.stringify(l));
      for (const id of ids) assert.ok(logged.some((l) => l.reqId === id && l.res), `a completion line for ${id}`);
    });
  });

  describe(`one log line per delivery attempt [${engine}]`, () => {
    let h: TestHerald;
    let receiver: Receiver;
    let endpointId: string;

    before(async () => {
      receiver = await startReceiver();
      // 500, then 204; the second event: 410, a permanent failure.
      receiver.respond((req) => {
        const event = JSON.parse(req.body.toString()) as { data: { message: string } };
        if (event.data.message === 'gone') return { status: 410 };
        return { status: receiver.requests.filter((r) => !r.body.includes('"gone"')).length === 1 ? 500 : 204 };
      });
      h = await createTestHerald(engine, { metrics: { logLevel: 'debug' } });
      endpointId = (await h.api('POST', '/v1/endpoints', { url: receiver.url, event_types: ['alarm.created'] })).json.id;
    });
    after(async () => {
      await h.close();
      await receiver.close();
    });

    test('delivery, event, endpoint, attempt, outcome, result, status and duration; successes and retries at debug, a failed delivery at info', async () => {
      const retried = (await h.api('POST', '/v1/events', { type: 'alarm.created', data: alarmData() })).json.id;
      const gone = (await h.api('POST', '/v1/events', { type: 'alarm.created', data: alarmData({ message: 'gone' }) })).json.id;
      await h.drain();
      const attempts = lines(h.logs()).filter((l) => l.delivery && l.outcome);
      const { rows } = await h.db.query<{ id: string; event_id: string }>('SELECT id, event_id FROM deliveries');
      const deliveryOf = new Map(rows.map((r) => [r.event_id, r.id]));
      const shape = (l: Line) => ({ level: l.level, msg: l.msg, event: l.event, endpoint: l.endpoint, delivery: l.delivery, attempt: l.attempt, outcome: l.outcome, result: l.result, status: l.status });
      assert.deepEqual(attempts.map(shape).sort((a, b) => (a.event + a.attempt).localeCompare(b.event + b.attempt)), [
        { level: 20, msg: 'delivery attempt failed; it will be retried', event: retried, endpoint: endpointId, delivery: deliveryOf.get(retried), attempt: 1, outcome: 'retrying', result: '5xx', status: 500 },
        { level: 20, msg: 'delivery attempt succeeded', event: retried, endpoint: endpointId, delivery: deliveryOf.get(retried), attempt: 2, outcome: 'succeeded', result: '2xx', status: 204 },
        { level: 30, msg: 'delivery failed', event: gone, endpoint: endpointId, delivery: deliveryOf.get(gone), attempt: 1, outcome: 'failed', result: '4xx', status: 410 },
      ].sort((a, b) => (a.event + a.attempt).localeCompare(b.event + b.attempt)));
      for (const l of attempts) assert.ok(Number.isInteger(l.duration_ms) && l.duration_ms >= 0, JSON.stringify(l));
      assert.equal(attempts.find((l) => l.outcome === 'failed')!.error, 'HTTP 410');
      for (const l of attempts) assert.equal(l.url, undefined, 'the address is not logged: it may hold a token');
    });
  });
}

describe('HERALD_LOG_FORMAT', () => {
  const dirs: string[] = [];
  const started: Herald[] = [];
  after(async () => {
    for (const h of started) await h.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  async function start(format: string | undefined): Promise<{ herald: Herald; text: () => string }> {
    const dataDir = mkdtempSync(join(tmpdir(), 'herald-log-'));
    dirs.push(dataDir);
    const env: Record<string, string> = { HERALD_DATA_DIR: dataDir, HERALD_PORT: '0', HERALD_ENCRYPTION_KEY: TEST_KEY.toString('base64') };
    if (format) env.HERALD_LOG_FORMAT = format;
    const stream = new PassThrough();
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    const herald = await startHerald({ config: loadConfig({ env }), logStream: stream });
    started.push(herald);
    return { herald, text: () => Buffer.concat(chunks).toString('utf8') };
  }

  test('json (the default): one JSON object a line, with the request id', async () => {
    const { herald, text } = await start(undefined);
    const res = await fetch(`${herald.url}/healthz`, { headers: { 'x-request-id': 'json-line-1' } });
    assert.equal(res.headers.get('x-request-id'), 'json-line-1');
    const logged = lines(text());
    assert.ok(logged.some((l) => l.reqId === 'json-line-1' && l.msg === 'request completed'));
  });

  test('pretty: readable lines, not JSON, with the level, the message and the request id', async () => {
    const { herald, text } = await start('pretty');
    await fetch(`${herald.url}/healthz`, { headers: { 'x-request-id': 'pretty-line-1' } });
    const out = text();
    const line = out.split('\n').find((l) => l.includes('request completed'));
    assert.ok(line, out);
    assert.match(line, /INFO/);
    assert.throws(() => JSON.parse(line));
    assert.match(out, /reqId: "pretty-line-1"/);
    assert.ok(!out.includes('\u001b['), 'no colours when the log is not a terminal');
  });
});
