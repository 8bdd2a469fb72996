import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { request as httpsRequest, createServer } from 'node:https';
import type { RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import Fastify from 'fastify';
import type { HeraldEvent } from '@herald/verify';
import { heraldRouter } from '../../verify/examples/express.ts';
import { heraldPlugin } from '../../verify/examples/fastify.ts';
import { heraldRoute } from '../../verify/examples/next-app-router.ts';
import { heraldListener, type HeraldWebhookOptions } from '../../verify/examples/node-http.ts';
import { heraldHandler } from '../../verify/examples/fetch-handler.ts';
import { addEventType } from '../src/services/event-types.ts';
import { ENGINES } from './helpers/engines.ts';
import { alarmData, createTestHerald, type TestHerald } from './helpers/herald.ts';
import { TLS } from './helpers/tls.ts';

/**
 * The receiver recipes of packages/verify/README.md ("Per framework") run as
 * written, in packages/verify/examples/, behind real HTTPS servers, and the
 * real dispatcher delivers to them: a first delivery, a redelivery of the
 * same event, an event type the recipe does not know, and a receiver holding
 * the wrong secret.
 */

interface Served {
  url: string;
  close(): Promise<void>;
}

interface Recipe {
  name: string;
  file: string;
  serve(options: HeraldWebhookOptions): Promise<Served>;
  /** Express and Fastify: the rest of the app still gets parsed JSON. */
  jsonElsewhere?: boolean;
}

const WEBHOOK_PATH = '/webhooks/herald';

async function listenHttps(listener: RequestListener): Promise<Served> {
  const server = createServer({ key: TLS.key, cert: TLS.cert }, listener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `https://localhost:${port}${WEBHOOK_PATH}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * The smallest node:https → Fetch adapter: what Next.js, Workers, Deno and Bun
 * do before calling a handler with a `Request`. The recipe's code runs
 * unchanged behind it; a handler that throws gets a 500, as on those runtimes.
 */
function fetchListener(handler: (request: Request) => Promise<Response>): RequestListener {
  return (req, res) => {
    void (async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const headers = new Headers();
      for (let i = 0; i < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i]!, req.rawHeaders[i + 1]!);
      const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
      const request = new Request(`https://${req.headers.host}${req.url}`, { method: req.method, headers, body: hasBody ? Buffer.concat(chunks) : undefined });
      let response: Response;
      try {
        response = await handler(request);
      } catch {
        response = new Response(null, { status: 500 });
      }
      res.writeHead(response.status, Object.fromEntries(response.headers));
      res.end(Buffer.from(await response.arrayBuffer()));
    })();
  };
}

const RECIPES: Recipe[] = [
  {
    name: 'Express (route-level express.raw)',
    file: 'express.ts',
    jsonElsewhere: true,
    async serve(options) {
      const app = express();
      app.use(heraldRouter(options)); // before the app-wide JSON parser, as the README says
      app.use(express.json());
      app.post('/api/echo', (req, res) => {
        res.json({ parsed: req.body });
      });
      return listenHttps(app);
    },
  },
  {
    name: 'Fastify (raw body in an encapsulated plugin)',
    file: 'fastify.ts',
    jsonElsewhere: true,
    async serve(options) {
      const app = Fastify({ https: { key: TLS.key, cert: TLS.cert } });
      await app.register(heraldPlugin(options));
      app.post('/api/echo', async (req) => ({ parsed: req.body }));
      await app.listen({ port: 0, host: '127.0.0.1' });
      const { port } = app.server.address() as AddressInfo;
      return { url: `https://localhost:${port}${WEBHOOK_PATH}`, close: () => app.close() };
    },
  },
  {
    name: 'Next.js App Router (await request.text())',
    file: 'next-app-router.ts',
    async serve(options) {
      const { POST } = heraldRoute(options); // what app/webhooks/herald/route.ts exports
      return listenHttps(fetchListener(POST));
    },
  },
  {
    name: 'node:http',
    file: 'node-http.ts',
    async serve(options) {
      return listenHttps(heraldListener(options));
    },
  },
  {
    name: 'Fetch API handler (Workers, Deno, Bun)',
    file: 'fetch-handler.ts',
    async serve(options) {
      const handler = heraldHandler(options);
      return listenHttps(fetchListener(handler.fetch));
    },
  },
];

/** POSTs JSON over HTTPS with the test CA; resolves with the status and body. */
function postJson(url: string, body: unknown): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const payload = JSON.stringify(body);
    const req = httpsRequest(url, { method: 'POST', ca: TLS.ca, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(payload);
  });
}

const text = (bytes: Uint8Array | null | undefined) => (bytes ? Buffer.from(bytes).toString('utf8') : '');

describe('the receiver recipes are the README snippets', () => {
  const readme = readFileSync(new URL('../../verify/README.md', import.meta.url), 'utf8');
  for (const recipe of RECIPES) {
    test(`README shows examples/${recipe.file} verbatim`, () => {
      const source = readFileSync(new URL(`../../verify/examples/${recipe.file}`, import.meta.url), 'utf8').trimEnd();
      assert.ok(readme.includes(source), `packages/verify/README.md no longer matches packages/verify/examples/${recipe.file}`);
    });
  }
});

for (const engine of ENGINES) {
  for (const recipe of RECIPES) {
    describe(`receiver recipe: ${recipe.name} [${engine}]`, () => {
      let h: TestHerald;
      let receiver: Served;
      let wrongSecretReceiver: Served;
      const handled: HeraldEvent[] = [];
      const handledWithWrongSecret: HeraldEvent[] = [];

      const deliveryOf = async (eventId: string) => {
        const rows = await h.db.query<{ state: string; last_status: number | null; attempts: number }>(
          'SELECT state, last_status, attempts FROM deliveries WHERE event_id = $1',
          [eventId],
        );
        assert.equal(rows.rows.length, 1, 'one delivery per event');
        return rows.rows[0]!;
      };
      const attemptsOf = async (eventId: string) =>
        (
          await h.db.query<{ status_code: number | null; response_excerpt: Uint8Array | null }>(
            'SELECT status_code, response_excerpt FROM attempts WHERE event_id = $1 ORDER BY attempt_number',
            [eventId],
          )
        ).rows;

      before(async () => {
        h = await createTestHerald(engine);
        // The dispatcher signs with the injected clock, the recipes check the
        // timestamp against the real one, as in production: start the test
        // clock at the real time. Nothing below waits on the wall clock.
        h.clock.set(new Date());
        await addEventType(h.db, h.deps.validator, { name: 'container.sealed' });

        // The endpoint first, for its secret; then the receiver; then its address.
        const endpoint = await h.api('POST', '/v1/endpoints', { url: `https://localhost${WEBHOOK_PATH}`, event_types: ['alarm.created', 'container.sealed'] });
        assert.equal(endpoint.status, 201);
        const secret: string = endpoint.json.secret;
        receiver = await recipe.serve({ secret, onEvent: (event) => void handled.push(event) });
        assert.equal((await h.api('PATCH', `/v1/endpoints/${endpoint.json.id}`, { url: receiver.url })).status, 200);

        // A second receiver configured with the first endpoint's secret, not its own.
        wrongSecretReceiver = await recipe.serve({ secret, onEvent: (event) => void handledWithWrongSecret.push(event) });
        const other = await h.api('POST', '/v1/endpoints', { url: wrongSecretReceiver.url, event_types: ['alarm.resolved'] });
        assert.equal(other.status, 201);
        assert.notEqual(other.json.secret, secret);
      });
      after(async () => {
        await h.close();
        await receiver.close();
        await wrongSecretReceiver.close();
      });

      let eventId: string;

      test('a delivery is verified against the raw body, handed to onEvent as the envelope, and answered 2xx', async () => {
        const published = await h.api('POST', '/v1/events', { type: 'alarm.created', data: alarmData() });
        assert.equal(published.status, 202);
        eventId = published.json.id;
        const report = await h.dispatcher.tick();
        assert.equal(report.succeeded, 1, JSON.stringify(report));
        assert.deepEqual(handled, [{ id: eventId, type: 'alarm.created', created_at: published.json.created_at, data: alarmData() }]);
        assert.deepEqual(await deliveryOf(eventId), { state: 'succeeded', last_status: 204, attempts: 1 });
      });

      test('a redelivery of the same event is acknowledged 2xx and not handled twice', async () => {
        await h.db.query(`UPDATE deliveries SET state = 'pending', next_attempt_at = $2 WHERE event_id = $1`, [eventId, h.clock.now()]);
        const report = await h.dispatcher.tick();
        assert.equal(report.claimed, 1);
        assert.equal(report.succeeded, 1, JSON.stringify(report));
        assert.equal(handled.length, 1, 'onEvent ran once');
        assert.equal((await deliveryOf(eventId)).state, 'succeeded');
        assert.deepEqual((await attemptsOf(eventId)).map((a) => a.status_code), [204, 204]);
      });

      test('an event type the receiver does not know is acknowledged 2xx and ignored', async () => {
        const published = await h.api('POST', '/v1/events', { type: 'container.sealed', data: { seal: 'S-1' } });
        assert.equal(published.status, 202);
        const report = await h.dispatcher.tick();
        assert.equal(report.succeeded, 1, JSON.stringify(report));
        assert.equal(handled.length, 1, 'onEvent not called');
        assert.deepEqual(await deliveryOf(published.json.id), { state: 'succeeded', last_status: 204, attempts: 1 });
      });

      test('a receiver holding the wrong secret answers 400 and the delivery fails for good', async () => {
        const published = await h.api('POST', '/v1/events', {
          type: 'alarm.resolved',
          data: alarmData({ resolved: true, resolved_at: '2026-11-20T09:02:41.000Z' }),
        });
        assert.equal(published.status, 202);
        const report = await h.dispatcher.tick();
        assert.equal(report.failed, 1, JSON.stringify(report));
        assert.deepEqual(handledWithWrongSecret, []);
        assert.equal(handled.length, 1);
        assert.deepEqual(await deliveryOf(published.json.id), { state: 'failed', last_status: 400, attempts: 1 });
        const [attempt] = await attemptsOf(published.json.id);
        assert.equal(attempt?.status_code, 400);
        assert.match(text(attempt?.response_excerpt), /no_matching_signature/);
      });

      if (recipe.jsonElsewhere) {
        test('the rest of the app still parses JSON', async () => {
          const echoed = await postJson(new URL('/api/echo', receiver.url).toString(), { a: [1, 2] });
          assert.equal(echoed.status, 200);
          assert.deepEqual(JSON.parse(echoed.body), { parsed: { a: [1, 2] } });
        });
      }
    });
  }
}
