import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { ENGINES } from './helpers/engines.ts';
import { createTestHerald, type TestHerald } from './helpers/herald.ts';
import { opensslSignature } from './helpers/independent-hmac.ts';
import { startReceiver, type Receiver } from './helpers/receiver.ts';
import { rotateSecret } from '../src/services/endpoints.ts';
import { pruneAttempts } from '../src/storage/queries/record-results.ts';

for (const engine of ENGINES) {
  describe(`the running dispatcher [${engine}]`, () => {
    let h: TestHerald;
    let healthy: Receiver;
    let hanging: Receiver;

    before(async () => {
      // endpointConcurrency 4: the hanging endpoint can hold at most 4 of the 32 slots.
      h = await createTestHerald(engine, { dispatcher: { endpointConcurrency: 4, concurrency: 32 } });
      healthy = await startReceiver();
      hanging = await startReceiver();
      hanging.respond({ hang: true });
    });
    after(async () => {
      await h.close();
      await healthy.close();
      await hanging.close();
    });

    test('a published event wakes the idle dispatcher through LISTEN/NOTIFY (no tick)', async () => {
      await h.api('POST', '/v1/endpoints', { url: healthy.url, event_types: ['shipment.created'] });
      await h.dispatcher.start();
      await h.api('POST', '/v1/events', { type: 'shipment.created', data: { id: 1 } });
      await healthy.received(1);
    });

    test('an endpoint that hangs does not hold up deliveries to a healthy one', async () => {
      await h.api('POST', '/v1/endpoints', { url: hanging.url, event_types: ['alarm.resolved', 'shipment.created'] });
      // 20 events for both endpoints: the hanging one takes its 4 slots and keeps them.
      for (let i = 0; i < 20; i++) await h.api('POST', '/v1/events', { type: 'shipment.created', data: { id: 100 + i } });
      await healthy.received(21);
      await hanging.received(4);
      assert.equal(hanging.requests.length, 4, 'the per-endpoint cap holds the hanging endpoint to 4 in flight');
    });

    test('stop() lets in-flight attempts finish within the grace period, then aborts them and gives them back, no attempt spent', async () => {
      await h.dispatcher.stop(50);
      assert.equal(h.dispatcher.inFlight, 0);
      const { rows } = await h.db.query<{ state: string; n: number; attempts: number }>(
        `SELECT d.state, count(*)::int AS n, max(d.attempts) AS attempts FROM deliveries d
           JOIN endpoints e ON e.id = d.endpoint_id WHERE e.url = $1 GROUP BY d.state`,
        [hanging.url],
      );
      // Nothing is lost: the 4 aborted attempts are due again at once, the rest never left.
      assert.deepEqual(rows.map((r) => [r.state, r.n, r.attempts]), [['pending', 20, 0]]);
      const inFlight = await h.db.query<{ n: number }>('SELECT count(*)::int AS n FROM in_flight');
      assert.equal(inFlight.rows[0]!.n, 0, 'every lease handed back');
      const aborted = await h.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM attempts a JOIN endpoints e ON e.id = a.endpoint_id
          WHERE e.url = $1 AND a.error LIKE 'aborted: Herald shut down%'`,
        [hanging.url],
      );
      assert.equal(aborted.rows[0]!.n, 4);
    });
  });

  describe(`a fan-out wider than one claim [${engine}]`, () => {
    test('every endpoint gets every event once, though each claim asks only for the room of the endpoints in flight plus one cap', async () => {
      // Cap 2: the first claim asks for 2, the next for what 1 endpoint in flight has left plus 2, and so on.
      const h = await createTestHerald(engine, { dispatcher: { endpointConcurrency: 2, concurrency: 64 } });
      const receiver = await startReceiver();
      try {
        for (let i = 0; i < 12; i++) await h.api('POST', '/v1/endpoints', { url: `${receiver.url}/e${i}`, event_types: ['shipment.created'] });
        await h.dispatcher.start();
        const events = Array.from({ length: 6 }, (_, i) => ({ type: 'shipment.created', data: { id: `wide-${i}` } }));
        assert.equal((await h.api('POST', '/v1/events/batch', { events })).status, 202);
        await receiver.received(72);
        const pairs = new Set(receiver.requests.map((r) => `${r.path} ${String(r.headers['x-service-event-id'])}`));
        assert.equal(pairs.size, 72, 'each of the 12 endpoints got each of the 6 events');
        await h.dispatcher.stop();
        const { rows } = await h.db.query<{ state: string; n: number }>('SELECT state, count(*)::int AS n FROM deliveries GROUP BY state');
        assert.deepEqual(rows, [{ state: 'succeeded', n: 72 }]);
        assert.equal(receiver.requests.length, 72, 'and nothing twice');
      } finally {
        await h.close();
        await receiver.close();
      }
    });
  });

  describe(`secret rotation [${engine}]`, () => {
    let h: TestHerald;
    let receiver: Receiver;
    before(async () => {
      h = await createTestHerald(engine);
      receiver = await startReceiver();
    });
    after(async () => {
      await h.close();
      await receiver.close();
    });

    test('a rotation takes effect on the very next attempt, even a retry of an older event', async () => {
      const ep = await h.api('POST', '/v1/endpoints', { url: receiver.url, event_types: ['shipment.created'] });
      receiver.respond((_r, i) => (i === 0 ? { status: 503 } : { status: 200 }));
      await h.api('POST', '/v1/events', { type: 'shipment.created', data: { id: 7 } });
      await h.dispatcher.tick();
      const { secret } = await rotateSecret(h.deps, h.accountId, ep.json.id);
      assert.notEqual(secret, ep.json.secret);
      h.clock.advance(5 * 60_000);
      await h.dispatcher.tick();
      const [first, second] = receiver.requests;
      const sig = (r: typeof first, s: string) => opensslSignature(s, String(r!.headers['x-service-timestamp']), r!.body);
      assert.equal(first!.headers['x-service-signature'], sig(first, ep.json.secret));
      assert.equal(second!.headers['x-service-signature'], sig(second, secret));
      assert.notEqual(second!.headers['x-service-signature'], sig(second, ep.json.secret));
    });
  });

  describe(`endpoints that share an origin [${engine}]`, () => {
    test('the origin cap holds the requests to one origin, whatever the endpoints; none waits in the client for a connection', async () => {
      // Two endpoints, one origin, one request at a time to it: one claim takes one delivery.
      const h = await createTestHerald(engine, { dispatcher: { endpointConcurrency: 1, originConcurrency: 1, requestTimeoutMs: 1000 } });
      const receiver = await startReceiver();
      receiver.respond({ status: 204, delayMs: 300 });
      try {
        for (const path of ['a', 'b']) await h.api('POST', '/v1/endpoints', { url: `${receiver.url}/${path}`, event_types: ['shipment.created'] });
        await h.api('POST', '/v1/events', { type: 'shipment.created', data: { id: 1 } });
        const first = await h.dispatcher.tick();
        const second = await h.dispatcher.tick();
        assert.deepEqual([first.claimed, first.succeeded, second.claimed, second.succeeded], [1, 1, 1, 1]);
        assert.deepEqual(receiver.requests.map((r) => r.path.slice(-2)).sort(), ['/a', '/b']);
        assert.equal(receiver.connections, 1, 'the second went out on the first one\'s connection');
      } finally {
        await h.close();
        await receiver.close();
      }
    });

    test('at shutdown, an attempt with no answer is aborted and given back; the delivery not claimed is left as it was', async () => {
      const h = await createTestHerald(engine, { dispatcher: { endpointConcurrency: 1, originConcurrency: 1 } });
      const receiver = await startReceiver();
      receiver.respond({ hang: true });
      try {
        for (const path of ['a', 'b']) await h.api('POST', '/v1/endpoints', { url: `${receiver.url}/${path}`, event_types: ['shipment.created'] });
        await h.dispatcher.start();
        await h.api('POST', '/v1/events', { type: 'shipment.created', data: { id: 1 } });
        await receiver.received(1);
        await h.dispatcher.stop(0);
        assert.equal(receiver.requests.length, 1);
        const { rows } = await h.db.query<{ state: string; attempts: number }>('SELECT state, attempts FROM deliveries');
        assert.deepEqual(rows.map((r) => [r.state, r.attempts]), [['pending', 0], ['pending', 0]]);
        const logged = await h.db.query<{ error: string }>('SELECT error FROM attempts');
        assert.deepEqual(logged.rows.map((r) => r.error), ['aborted: Herald shut down before the receiver answered']);
      } finally {
        await h.close();
        await receiver.close();
      }
    });
  });

  describe(`attempt log retention [${engine}]`, () => {
    test('pruning keeps the newest 100 attempts of each endpoint', async () => {
      const h = await createTestHerald(engine);
      const receiver = await startReceiver();
      try {
        const ep = await h.api('POST', '/v1/endpoints', { url: receiver.url, event_types: ['shipment.created'] });
        const events = Array.from({ length: 120 }, (_, i) => ({ type: 'shipment.created', data: { id: i } }));
        await h.api('POST', '/v1/events/batch', { events });
        // Each tick sends at most 8 (the per-endpoint cap); a second apart, so the order is clear.
        for (let i = 0; i < 15; i++) {
          await h.dispatcher.tick();
          h.clock.advance(1000);
        }
        const count = async () =>
          (await h.db.query<{ n: number }>('SELECT count(*)::int AS n FROM attempts WHERE endpoint_id = $1', [ep.json.id])).rows[0]!.n;
        assert.equal(await count(), 120);
        assert.equal(await pruneAttempts(h.db, [ep.json.id], 100), 20);
        assert.equal(await count(), 100);
        const oldest = await h.db.query<{ started_at: Date }>('SELECT min(started_at) AS started_at FROM attempts WHERE endpoint_id = $1', [ep.json.id]);
        assert.ok(oldest.rows[0]!.started_at.getTime() > new Date('2026-11-20T08:00:00.000Z').getTime());
      } finally {
        await h.close();
        await receiver.close();
      }
    });

    test('attempts started in the same millisecond: the newest 100 by start time, then by id; each endpoint on its own', async () => {
      const h = await createTestHerald(engine);
      try {
        const [busy, quiet, exact, untouched] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
        const base = Date.parse('2026-11-20T09:00:00.000Z');
        // Three attempts per millisecond, so the 100th newest shares its time with others.
        const rows = (endpoint: string, n: number) => Array.from({ length: n }, (_, i) => ({ id: randomUUID(), endpoint, at: new Date(base + Math.floor(i / 3)) }));
        const all = [...rows(busy, 131), ...rows(quiet, 40), ...rows(exact, 100), ...rows(untouched, 150)];
        await h.db.query(
          `INSERT INTO attempts (id, account_id, endpoint_id, event_id, event_type, attempt_number, started_at, duration_ms, outcome, request_headers)
           SELECT a.id, $1, a.endpoint_id, a.id, 'shipment.created', 1, a.started_at, 5, 'succeeded', '{}'
             FROM unnest($2::uuid[], $3::uuid[], $4::timestamptz[]) AS a (id, endpoint_id, started_at)`,
          [h.accountId, all.map((r) => r.id), all.map((r) => r.endpoint), all.map((r) => r.at)],
        );
        // busy given twice: pruned once.
        assert.equal(await pruneAttempts(h.db, [busy, quiet, exact, busy], 100), 31);
        const left = async (endpoint: string) =>
          (await h.db.query<{ id: string }>('SELECT id FROM attempts WHERE endpoint_id = $1 ORDER BY id', [endpoint])).rows.map((r) => r.id);
        // The same order computed here: newest first, then by id (as PostgreSQL orders uuids: by their bytes, which is their text).
        const expected = all
          .filter((r) => r.endpoint === busy)
          .sort((x, y) => y.at.getTime() - x.at.getTime() || (x.id < y.id ? -1 : 1))
          .slice(0, 100)
          .map((r) => r.id)
          .sort();
        assert.deepEqual(await left(busy), expected);
        assert.equal((await left(quiet)).length, 40);
        assert.equal((await left(exact)).length, 100);
        assert.equal((await left(untouched)).length, 150);
        assert.equal(await pruneAttempts(h.db, [busy, quiet, exact], 100), 0, 'a second run finds nothing to delete');
      } finally {
        await h.close();
      }
    });
  });
}
