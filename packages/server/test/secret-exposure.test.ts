import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { decryptSecret } from '../src/core/secrets.ts';
import { buildApp } from '../src/http/app.ts';
import { ENGINES } from './helpers/engines.ts';
import { alarmData, createTestHerald, TEST_KEY, type TestHerald } from './helpers/herald.ts';
import { startReceiver, type Receiver } from './helpers/receiver.ts';

/** Every form in which a secret could leak: as is, its random part, and as hex or base64 of its bytes. */
function forms(secret: string): string[] {
  const random = secret.replace(/^(whsec_|hk_[A-Za-z0-9]{8}_)/, '');
  return [secret, random, Buffer.from(secret).toString('hex'), Buffer.from(secret).toString('base64'), Buffer.from(random).toString('hex')];
}

function assertAbsent(haystack: string, secret: string, where: string): void {
  for (const form of forms(secret)) assert.ok(!haystack.includes(form), `${where} must not contain the secret (${form.slice(0, 12)}…)`);
}

for (const engine of ENGINES) {
  describe(`signing secrets and API keys appear only where they are shown once [${engine}]`, () => {
    let h: TestHerald;
    let traceApp: FastifyInstance;
    const traceLogs: Buffer[] = [];
    let secret: string;
    let endpointId: string;
    const seen: string[] = [];

    before(async () => {
      h = await createTestHerald(engine);
      // A second app over the same database that logs everything it can.
      const stream = new PassThrough();
      stream.on('data', (c: Buffer) => traceLogs.push(c));
      traceApp = await buildApp({ ...h.deps, outbound: h.outbound, disableAfter: 20, maxBodyBytes: 1024 * 1024, logLevel: 'trace', logStream: stream });

      const created = await h.api('POST', '/v1/endpoints', { url: 'https://secret.example.com/hook', event_types: ['alarm.created'] });
      assert.equal(created.status, 201);
      secret = created.json.secret;
      endpointId = created.json.id;
      assert.match(secret, /^whsec_/);
    });
    after(async () => {
      await traceApp.close();
      await h.close();
    });

    test('only the create response carries the secret', async () => {
      const responses = [
        await h.api('GET', `/v1/endpoints/${endpointId}`),
        await h.api('GET', '/v1/endpoints'),
        await h.api('PATCH', `/v1/endpoints/${endpointId}`, { description: 'renamed' }),
        await h.api('PATCH', `/v1/endpoints/${endpointId}`, { url: 'https://secret.example.com/v2' }),
        await h.api('POST', '/v1/events', { type: 'alarm.created', data: alarmData() }),
      ];
      const event = await h.api('GET', `/v1/events/${responses[4]!.json.id}`);
      responses.push(event);
      for (const res of responses) {
        assert.ok(res.status < 300, JSON.stringify(res.json));
        assertAbsent(JSON.stringify(res.json), secret, 'a response');
        assertAbsent(JSON.stringify(res.headers), secret, 'response headers');
        assert.equal(res.json.secret, undefined);
        seen.push(JSON.stringify(res.json));
      }
      assert.ok(responses[0]!.json.secret_hint.startsWith('whsec_'));
      assert.ok(responses[0]!.json.secret_hint.endsWith('…'));
    });

    test('no column of any table holds the secret or the API key in clear', async () => {
      const { rows: tables } = await h.db.query<{ table_name: string }>(
        `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'`,
      );
      assert.ok(tables.length >= 7);
      let dump = '';
      for (const { table_name } of tables) {
        const { rows } = await h.db.query<{ row: string }>(`SELECT row_to_json(t)::text AS row FROM ${table_name} t`);
        dump += rows.map((r) => r.row).join('\n');
      }
      assert.ok(dump.includes(endpointId), 'the dump does cover the endpoint');
      assertAbsent(dump, secret, 'the database');
      assertAbsent(dump, h.apiKey, 'the database');

      const { rows } = await h.db.query<{ secret_encrypted: Buffer; secret_hint: string }>('SELECT secret_encrypted, secret_hint FROM endpoints WHERE id = $1', [endpointId]);
      const sealed = rows[0]!.secret_encrypted;
      assert.ok(Buffer.isBuffer(sealed));
      for (const form of forms(secret)) assert.ok(!sealed.includes(Buffer.from(form)), 'secret_encrypted is not the secret');
      assert.equal(decryptSecret(TEST_KEY, sealed, endpointId), secret, 'but it decrypts to it under the operator key');
      assert.equal(rows[0]!.secret_hint, `${secret.slice(0, 10)}…`);
    });

    test('neither the secret nor the API key reaches the logs, even at trace level', async () => {
      const inject = (app: FastifyInstance, method: 'GET' | 'POST', url: string, body?: unknown, key = h.apiKey) =>
        app.inject({
          method,
          url,
          headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
          payload: body ? JSON.stringify(body) : undefined,
        });
      const created = await inject(traceApp, 'POST', '/v1/endpoints', { url: 'https://trace.example.com/', event_types: ['alarm.created'] });
      assert.equal(created.statusCode, 201);
      const traceSecret = created.json().secret as string;
      await inject(traceApp, 'GET', `/v1/endpoints/${created.json().id}`);
      await inject(traceApp, 'POST', '/v1/events', { type: 'alarm.created', data: alarmData() });
      await inject(traceApp, 'POST', '/v1/events', { type: 'alarm.created', data: { broken: true } });
      await inject(traceApp, 'GET', '/v1/endpoints', undefined, `${h.apiKey.slice(0, -2)}zz`);
      const trace = Buffer.concat(traceLogs).toString('utf8');
      assert.ok(trace.includes('incoming request'), 'the trace app does log requests');
      for (const s of [secret, traceSecret]) assertAbsent(trace, s, 'the trace log');
      assertAbsent(trace, h.apiKey, 'the trace log');
      assert.ok(!trace.includes(h.apiKey.slice(0, -2)), 'not even a wrong key');

      const info = h.logs();
      assert.ok(info.includes('request completed'), 'the test app does log requests');
      assertAbsent(info, secret, 'the log');
      assertAbsent(info, h.apiKey, 'the log');
    });

    test("a logged database error leaves out the statement's parameters", async () => {
      // PGlite's errors carry the failed statement's parameters; an unexpected one is logged whole.
      let caught: unknown;
      try {
        await h.deps.db.query('SELECT $1::text AS secret, 1 / (length($1) - length($1)) AS boom', [secret]);
      } catch (err) {
        caught = err;
      }
      assert.ok(caught instanceof Error, 'the statement fails');
      traceApp.log.error({ err: caught }, 'unexpected');
      traceApp.log.error({ err: new Error('wrapped', { cause: caught }) }, 'unexpected, wrapped');
      const trace = Buffer.concat(traceLogs).toString('utf8');
      assert.ok(trace.includes('division by zero'), 'the error itself is logged');
      assertAbsent(trace, secret, 'the trace log');
    });

    test('errors about an endpoint never carry its secret', async () => {
      const stranger = await h.newAccount('Stranger');
      const errors = [
        await h.api('PATCH', `/v1/endpoints/${endpointId}`, { secret: 'whsec_mine' }),
        await h.api('PATCH', `/v1/endpoints/${endpointId}`, { url: 'http://secret.example.com/' }),
        await h.api('GET', `/v1/endpoints/${endpointId}`, undefined, stranger.apiKey),
      ];
      for (const res of errors) {
        assert.ok(res.status >= 400);
        assertAbsent(JSON.stringify(res.json), secret, 'an error');
      }
    });

    test('a rotation with an overlap and a change of scheme show each new secret once, and neither it nor the old one anywhere else', async () => {
      const inject = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, body?: unknown) =>
        traceApp.inject({
          method,
          url,
          headers: { authorization: `Bearer ${h.apiKey}`, ...(body ? { 'content-type': 'application/json' } : {}) },
          payload: body ? JSON.stringify(body) : undefined,
        });
      const created = (await inject('POST', '/v1/endpoints', { url: 'https://overlap.example.com/', event_types: ['alarm.created'], signature_scheme: 'standard-webhooks' })).json();
      const rotated = (await inject('POST', `/v1/endpoints/${created.id}/rotate-secret`, { overlap_seconds: 3600 })).json();
      const changed = (await inject('PATCH', `/v1/endpoints/${created.id}`, { signature_scheme: 'herald' })).json();
      const secrets = [created.secret as string, rotated.secret as string, changed.secret as string];
      for (const s of secrets) assert.match(s, /^whsec_/);
      await inject('POST', `/v1/endpoints/${created.id}/rotate-secret`, { overlap_seconds: 3600 });
      const others = [
        await inject('GET', `/v1/endpoints/${created.id}`),
        await inject('GET', '/v1/endpoints'),
        await inject('DELETE', `/v1/endpoints/${created.id}/previous-secret`),
        await inject('POST', `/v1/endpoints/${created.id}/rotate-secret`, { overlap_seconds: -1 }),
      ];
      for (const res of others) for (const s of secrets) assertAbsent(res.body, s, 'an answer');
      const trace = Buffer.concat(traceLogs).toString('utf8');
      for (const s of secrets) assertAbsent(trace, s, 'the trace log');
      const { rows } = await h.db.query<{ row: string }>(`SELECT row_to_json(e)::text AS row FROM endpoints e WHERE id = $1`, [created.id]);
      for (const s of secrets) assertAbsent(rows[0]!.row, s, 'the endpoint row');
    });
  });
}

for (const engine of ENGINES) {
  describe(`the metrics and the delivery log carry no secret [${engine}]`, () => {
    const metricsToken = 'metrics-token-that-must-stay-secret-42';
    let h: TestHerald;
    let receiver: Receiver;

    before(async () => {
      receiver = await startReceiver();
      // A failure, a redirect (a permanent failure), then successes: every kind of attempt line is written.
      receiver.respond((_req, i) =>
        i === 0 ? { status: 500 } : i === 1 ? { status: 302, headers: { location: 'https://elsewhere.example.com/in?token=redirect-held-secret' } } : { status: 204 },
      );
      // At trace level, with the endpoint label: the most either can show.
      h = await createTestHerald(engine, { metrics: { token: metricsToken, endpointLabels: true, logLevel: 'trace', backlogCacheMs: 0 } });
    });
    after(async () => {
      await h.close();
      await receiver.close();
    });

    test('neither the signing secret, the API key, the metrics token, the operator key nor the address with its token', async () => {
      const created = await h.api('POST', '/v1/endpoints', { url: `${receiver.url}/hook?token=url-held-secret`, event_types: ['alarm.created'] });
      const secret = created.json.secret as string;
      for (let i = 0; i < 3; i++) await h.api('POST', '/v1/events', { type: 'alarm.created', data: alarmData() });
      await h.drain();
      assert.ok(receiver.requests.length >= 3);
      const denied = await h.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${metricsToken}-wrong` } });
      assert.equal(denied.statusCode, 401);
      const scraped = await h.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${metricsToken}` } });
      assert.equal(scraped.statusCode, 200);
      assert.ok(scraped.body.includes(`endpoint="${created.json.id}"`), 'the scrape does cover the endpoint');
      const logs = h.logs();
      assert.ok(logs.includes('delivery attempt succeeded') && logs.includes('delivery failed'), 'the log does cover the attempts');
      for (const [where, text] of [['the metrics', scraped.body], ['the 401', denied.body], ['the log', logs]] as const) {
        assertAbsent(text, secret, where);
        assertAbsent(text, h.apiKey, where);
        assertAbsent(text, metricsToken, where);
        assertAbsent(text, TEST_KEY.toString('base64'), where);
        assert.ok(!text.includes('url-held-secret'), `${where} must not contain the endpoint's address`);
        assert.ok(!text.includes('redirect-held-secret'), `${where} must not contain where a redirect pointed`);
      }
    });
  });
}
