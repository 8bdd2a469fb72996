import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Socket } from 'node:net';
import { ENGINES } from './helpers/engines.ts';
import { alarmData, createTestHerald, type TestHerald } from './helpers/herald.ts';
import { startReceiver, type Behaviour, type Receiver } from './helpers/receiver.ts';
import { TLS } from './helpers/tls.ts';

/** A port with nothing listening: bind, note it, close. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

for (const engine of ENGINES) {
  describe(`delivery outcomes [${engine}]`, () => {
    let h: TestHerald;
    let receiver: Receiver;
    let endpointId: string;

    before(async () => {
      // A short deadline so the hanging-receiver case takes 300 ms, not 10 s.
      // One connection to the receiver: a request sent while the last one's
      // connection is still busy would wait for it, and time out.
      h = await createTestHerald(engine, { dispatcher: { requestTimeoutMs: 300, originConcurrency: 1 } });
      receiver = await startReceiver();
      const res = await h.api('POST', '/v1/endpoints', { url: receiver.url, event_types: ['alarm.created'] });
      endpointId = res.json.id;
    });
    after(async () => {
      await h.close();
      await receiver.close();
    });
    beforeEach(async () => {
      receiver.requests.length = 0;
      // Keep the endpoint enabled across cases: these tests count attempts, not streaks.
      await h.db.query('UPDATE endpoints SET failure_streak = 0, enabled = true WHERE id = $1', [endpointId]);
    });

    async function deliverOnce(behaviour: Behaviour) {
      receiver.respond(behaviour);
      const event = await h.api('POST', '/v1/events', { type: 'alarm.created', data: alarmData() });
      assert.equal(event.status, 202);
      await h.drain();
      const { rows } = await h.db.query<{ state: string; attempts: number; last_status: number | null; last_error: string | null }>(
        'SELECT state, attempts, last_status, last_error FROM deliveries WHERE event_id = $1',
        [event.json.id],
      );
      return rows[0]!;
    }

    for (const status of [200, 201, 202, 204, 299]) {
      test(`${status} closes the delivery after one attempt`, async () => {
        const d = await deliverOnce({ status });
        assert.deepEqual([d.state, d.attempts, d.last_status, d.last_error], ['succeeded', 1, status, null]);
        assert.equal(receiver.requests.length, 1);
      });
    }

    for (const status of [500, 503, 429]) {
      test(`${status} is retried 6 times: exactly 7 attempts, then failed`, async () => {
        const d = await deliverOnce({ status });
        assert.equal(receiver.requests.length, 7);
        assert.equal(d.state, 'failed');
        assert.equal(d.attempts, 7);
        assert.equal(d.last_status, status);
        assert.match(d.last_error!, new RegExp(`HTTP ${status}.*gave up after 7 attempts`));
      });
    }

    for (const status of [400, 401, 404, 410, 422]) {
      test(`${status} is permanent: one attempt`, async () => {
        const d = await deliverOnce({ status });
        assert.equal(receiver.requests.length, 1);
        assert.deepEqual([d.state, d.attempts, d.last_status, d.last_error], ['failed', 1, status, `HTTP ${status}`]);
      });
    }

    test('302 is not followed: one attempt, a permanent failure that says to register the final address', async () => {
      const d = await deliverOnce({ status: 302, headers: { location: `${receiver.url}/moved` } });
      assert.equal(receiver.requests.length, 1);
      assert.equal(receiver.requests[0]!.path, '/webhooks');
      assert.equal(d.state, 'failed');
      assert.match(d.last_error!, /redirect to .*\/moved not followed; register the final address/);
    });

    test('an informational 103 before the answer is passed over: the final status decides', async () => {
      const d = await deliverOnce({ status: 204, earlyHints: true });
      assert.deepEqual([d.state, d.attempts, d.last_status], ['succeeded', 1, 204]);
    });

    test('a redirect\'s address is read as HTTP carries it (Latin-1), not mangled as UTF-8', async () => {
      const d = await deliverOnce({ status: 301, headers: { location: 'https://example.com/caf\u00e9' } });
      assert.match(d.last_error!, /redirect to https:\/\/example\.com\/caf\u00e9 not followed/);
    });

    test('a receiver that never answers is timed out and retried', async () => {
      const d = await deliverOnce({ hang: true });
      assert.equal(receiver.requests.length, 7);
      assert.equal(d.state, 'failed');
      assert.match(d.last_error!, /^timed out after 0.3 s/);
    });

    test('a connection dropped before the answer is retried', async () => {
      const d = await deliverOnce({ destroy: true });
      assert.equal(receiver.requests.length, 7);
      assert.match(d.last_error!, /connection closed by the receiver/);
    });

    test('a recovering receiver: 503, 503, then 200 succeeds on the third attempt', async () => {
      const d = await deliverOnce(((_r: unknown, i: number) => (i < 2 ? { status: 503 } : { status: 200 })) as never);
      assert.deepEqual([d.state, d.attempts, d.last_status], ['succeeded', 3, 200]);
    });

    test('the response body is never interpreted; its first 4 KiB are kept', async () => {
      receiver.respond({ status: 500, body: 'x'.repeat(10_000) });
      const event = await h.api('POST', '/v1/events', { type: 'alarm.created', data: alarmData() });
      await h.dispatcher.tick();
      const { rows } = await h.db.query<{ response_excerpt: Buffer; outcome: string }>(
        'SELECT response_excerpt, outcome FROM attempts WHERE event_id = $1',
        [event.json.id],
      );
      assert.equal(rows[0]!.response_excerpt.length, 4096);
      assert.equal(rows[0]!.outcome, 'retrying');
      await h.drain();
    });

    async function firstAttempt(behaviour: Behaviour) {
      receiver.respond(behaviour);
      const event = await h.api('POST', '/v1/events', { type: 'alarm.created', data: alarmData() });
      await h.dispatcher.tick();
      const { rows } = await h.db.query<{ status_code: number | null; error: string | null; response_excerpt: Buffer | null; outcome: string; duration_ms: number }>(
        'SELECT status_code, error, response_excerpt, outcome, duration_ms FROM attempts WHERE event_id = $1',
        [event.json.id],
      );
      await h.drain();
      return rows[0]!;
    }

    test('an answer whose body stalls keeps its status and what came of the body (the deadline ended at the headers)', async () => {
      // The deadline here is 300 ms; the body is waited for up to 1 s, then the connection is dropped.
      const a = await firstAttempt({ status: 503, partial: 'overloaded, try la', then: 'stall' });
      assert.deepEqual([a.status_code, a.error, a.response_excerpt?.toString(), a.outcome], [503, 'HTTP 503', 'overloaded, try la', 'retrying']);
    });

    test('an answer whose connection drops mid-body keeps its status and what came of the body', async () => {
      const a = await firstAttempt({ status: 200, partial: 'received, processi', then: 'destroy' });
      assert.deepEqual([a.status_code, a.error, a.response_excerpt?.toString(), a.outcome], [200, null, 'received, processi', 'succeeded']);
    });

    test('an answer whose body trickles on past the excerpt\'s second keeps its status and what came; its connection is closed', async () => {
      const a = await firstAttempt({ status: 200, partial: 'received', then: 'trickle' });
      assert.deepEqual([a.status_code, a.error, a.outcome], [200, null, 'succeeded']);
      assert.match(a.response_excerpt?.toString() ?? '', /^received\.+$/);
      // The attempt's own recorded duration: to the headers, not to the end of the excerpt's second.
      assert.ok(a.duration_ms < 1000, `timed to the headers, not ${a.duration_ms} ms`);
      const opened = receiver.connections;
      const next = await firstAttempt({ status: 204 });
      assert.equal(next.outcome, 'succeeded', 'the next request did not wait behind the cut one');
      assert.ok(receiver.connections > opened, 'the next request went out on a new connection: the cut one was closed');
    });

    test('an answer whose body ends within the excerpt\'s second keeps its connection for the next request', async () => {
      const a = await firstAttempt({ status: 200, partial: 'thanks', then: 'end' });
      assert.deepEqual([a.status_code, a.response_excerpt?.toString(), a.outcome], [200, 'thanks', 'succeeded']);
      const opened = receiver.connections;
      await firstAttempt({ status: 204 });
      assert.equal(receiver.connections, opened, 'the second request went out on the first one\'s connection');
    });

    async function nextAttemptIn(behaviour: Behaviour): Promise<number> {
      receiver.respond(behaviour);
      const event = await h.api('POST', '/v1/events', { type: 'alarm.created', data: alarmData() });
      await h.dispatcher.tick();
      const { rows } = await h.db.query<{ next_attempt_at: Date }>('SELECT next_attempt_at FROM deliveries WHERE event_id = $1', [event.json.id]);
      const inMs = rows[0]!.next_attempt_at.getTime() - h.clock.now().getTime();
      await h.drain();
      return inMs;
    }

    test('a Retry-After on a 503 sets the retry later than the schedule would; a repeated one counts as absent', async () => {
      // The schedule's first retry is 60 s (the fixed random() puts its jitter at zero).
      assert.equal(await nextAttemptIn({ status: 503 }), 60_000);
      assert.equal(await nextAttemptIn({ status: 503, headers: { 'retry-after': '600' } }), 600_000);
      assert.equal(await nextAttemptIn({ status: 429, headers: { 'Retry-After': '600' } }), 600_000);
      assert.equal(await nextAttemptIn({ status: 503, headers: { 'retry-after': ['600', '900'] } }), 60_000);
    });

    test('an answer of more than 4 KiB that has fully arrived keeps its connection for the next request', async () => {
      // A proxy's error page or a verbose acknowledgement: the excerpt is full
      // before undici has seen the end of the body, but the end came in the same read.
      const body = 'y'.repeat(6000);
      await firstAttempt({ status: 200, body });
      const opened = receiver.connections;
      const a = await firstAttempt({ status: 200, body });
      assert.equal(a.response_excerpt?.length, 4096);
      assert.equal(receiver.connections, opened, 'the second request went out on the first one\'s connection');
    });
  });

  describe(`transport failures [${engine}]`, () => {
    let h: TestHerald;
    before(async () => {
      h = await createTestHerald(engine);
    });
    after(() => h.close());

    async function errorOf(url: string): Promise<string> {
      const ep = await h.api('POST', '/v1/endpoints', { url, event_types: ['shipment.created'] });
      const event = await h.api('POST', '/v1/events', { type: 'shipment.created', data: { id: 1 } });
      await h.dispatcher.tick();
      const { rows } = await h.db.query<{ state: string; last_error: string }>(
        'SELECT state, last_error FROM deliveries WHERE event_id = $1 AND endpoint_id = $2',
        [event.json.id, ep.json.id],
      );
      assert.equal(rows[0]!.state, 'pending', 'transport failures are retried');
      await h.db.query(`UPDATE endpoints SET event_types = '{alarm.resolved}' WHERE id = $1`, [ep.json.id]);
      return rows[0]!.last_error;
    }

    test('a refused connection is retried with "connection refused"', async () => {
      assert.equal(await errorOf(`https://127.0.0.1:${await closedPort()}/hook`), 'connection refused');
    });

    test('an expired certificate is retried with "TLS: certificate has expired"', async () => {
      const r = await startReceiver({ cert: TLS.expiredCert });
      try {
        assert.equal(await errorOf(r.url), 'TLS: certificate has expired');
        assert.equal(r.requests.length, 0);
      } finally {
        await r.close();
      }
    });

    test('a certificate from an unknown authority is retried with a TLS message', async () => {
      const r = await startReceiver({ cert: TLS.untrustedCert });
      try {
        assert.match(await errorOf(r.url), /^TLS: /);
      } finally {
        await r.close();
      }
    });

    test('an unknown host is retried with a DNS message', async () => {
      assert.match(await errorOf('https://herald-test.invalid/hook'), /^DNS: host not found/);
    });

    test('a TLS handshake that never completes is cut at the deadline, not at undici\'s own 10 s connect timeout', async () => {
      // Accepts the TCP connection and never answers the ClientHello.
      const accepted = new Set<Socket>();
      const silent = createServer((s) => accepted.add(s));
      await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
      const h300 = await createTestHerald(engine, { dispatcher: { requestTimeoutMs: 300 } });
      try {
        const { port } = silent.address() as { port: number };
        await h300.api('POST', '/v1/endpoints', { url: `https://127.0.0.1:${port}/hook`, event_types: ['shipment.created'] });
        await h300.api('POST', '/v1/events', { type: 'shipment.created', data: { id: 1 } });
        await h300.dispatcher.tick();
        const { rows } = await h300.db.query<{ error: string; duration_ms: number }>('SELECT error, duration_ms FROM attempts');
        assert.equal(rows[0]!.error, 'timed out after 0.3 s');
        // Not a wall-clock assertion on the test: the attempt's own recorded
        // duration, which without the bound is undici's 10 s default.
        assert.ok(rows[0]!.duration_ms < 5000, `ended by the 300 ms deadline, not after ${rows[0]!.duration_ms} ms`);
      } finally {
        await h300.close();
        for (const s of accepted) s.destroy();
        silent.close();
      }
    });

  });
}
