import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import assert from 'node:assert/strict';
import { ENGINES } from './helpers/engines.ts';
import { createTestHerald, type TestHerald } from './helpers/herald.ts';
import { startReceiver, type Receiver } from './helpers/receiver.ts';
import { claimDeliveries } from '../src/storage/queries/claim-deliveries.ts';
import { recordResults, type AttemptRecord, type DeliveryResult, type ResultOutcome } from '../src/storage/queries/record-results.ts';
import type { Queryable } from '../src/storage/db.ts';

for (const engine of ENGINES) {
  describe(`automatic disabling after 20 consecutive failed deliveries [${engine}]`, () => {
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

    async function newEndpoint() {
      const res = await h.api('POST', '/v1/endpoints', { url: receiver.url, event_types: ['shipment.created'] });
      // Only this endpoint is subscribed to its own shipment ids: route by path.
      return res.json.id as string;
    }

    /** Publishes `n` events and delivers them one tick at a time, in order. */
    async function publishAndDeliver(n: number, status: number) {
      receiver.respond({ status });
      for (let i = 0; i < n; i++) {
        await h.api('POST', '/v1/events', { type: 'shipment.created', data: { id: i } });
        await h.dispatcher.tick();
      }
    }

    async function endpoint(id: string) {
      return (await h.api('GET', `/v1/endpoints/${id}`)).json;
    }

    test('19 failures, a success resets the count, 19 more keep it enabled; the 20th in a row disables', async () => {
      const id = await newEndpoint();
      await publishAndDeliver(19, 400);
      assert.equal((await endpoint(id)).failure_streak, 19);
      assert.equal((await endpoint(id)).state, 'enabled');
      await publishAndDeliver(1, 200);
      assert.equal((await endpoint(id)).failure_streak, 0);
      await publishAndDeliver(19, 410);
      const before20 = await endpoint(id);
      assert.deepEqual([before20.state, before20.failure_streak, before20.failure_threshold], ['enabled', 19, 20]);
      await publishAndDeliver(1, 404);
      const disabled = await endpoint(id);
      assert.equal(disabled.state, 'disabled');
      assert.equal(disabled.failure_streak, 20);
      assert.equal(disabled.disabled_at, h.clock.now().toISOString());
      assert.match(disabled.disabled_reason, /^20 consecutive failed deliveries; the last: HTTP 404$/);
      await h.api('DELETE', `/v1/endpoints/${id}`);
    });

    test('a retried delivery counts once, when it finally fails, not per attempt', async () => {
      const id = await newEndpoint();
      receiver.respond({ status: 503 });
      await h.api('POST', '/v1/events', { type: 'shipment.created', data: { id: 'one' } });
      await h.drain();
      const e = await endpoint(id);
      assert.equal(e.failure_streak, 1);
      assert.equal(e.state, 'enabled');
      await h.api('DELETE', `/v1/endpoints/${id}`);
    });

    test('a disabled endpoint receives nothing: pending retries and new events become skipped deliveries, kept', async () => {
      const id = await newEndpoint();
      // One delivery waiting for a retry when the endpoint gets disabled.
      receiver.respond({ status: 503 });
      const waiting = await h.api('POST', '/v1/events', { type: 'shipment.created', data: { id: 'waiting' } });
      assert.equal((await h.dispatcher.tick()).retrying, 1);
      // The 503 slowed the endpoint down for 5 s; the retry is a minute away.
      h.clock.advance(5_000);
      await publishAndDeliver(20, 400);
      assert.equal((await endpoint(id)).state, 'disabled');
      const w = await h.db.query<{ state: string }>('SELECT state FROM deliveries WHERE event_id = $1', [waiting.json.id]);
      assert.equal(w.rows[0]!.state, 'skipped');

      receiver.requests.length = 0;
      const later = await h.api('POST', '/v1/events', { type: 'shipment.created', data: { id: 'later' } });
      assert.equal(later.status, 202);
      const report = await h.drain();
      assert.equal(report.claimed, 0);
      assert.equal(receiver.requests.length, 0, 'no request is sent to a disabled endpoint');
      const l = await h.db.query<{ state: string }>('SELECT state FROM deliveries WHERE event_id = $1', [later.json.id]);
      assert.equal(l.rows[0]!.state, 'skipped');
      const event = await h.api('GET', `/v1/events/${later.json.id}`);
      assert.equal(event.json.deliveries[0].state, 'skipped');
      await h.api('DELETE', `/v1/endpoints/${id}`);
    });

    test('a delivery claimed just before its endpoint was disabled is skipped, not sent', async () => {
      const id = await newEndpoint();
      await h.api('POST', '/v1/events', { type: 'shipment.created', data: { id: 'race' } });
      await h.db.query('UPDATE endpoints SET enabled = false WHERE id = $1', [id]);
      receiver.requests.length = 0;
      const r = await h.dispatcher.tick();
      assert.equal(receiver.requests.length, 0);
      assert.equal(r.skipped, 1);
      const { rows } = await h.db.query<{ state: string }>('SELECT state FROM deliveries WHERE endpoint_id = $1', [id]);
      assert.deepEqual(rows.map((x) => x.state), ['skipped']);
    });

    /** Puts the endpoint's `n` oldest pending deliveries in flight, as another worker's claim would. */
    async function inFlightElsewhere(q: Queryable, endpointId: string, n: number) {
      await q.query(
        `INSERT INTO in_flight (delivery_id, endpoint_id, origin, lease_token, lease_until)
         SELECT d.id, d.endpoint_id, ep.origin, nextval('delivery_lease_token'), $3::timestamptz + interval '1 minute'
           FROM deliveries d JOIN endpoints ep ON ep.id = d.endpoint_id
          WHERE d.endpoint_id = $1 AND d.state = 'pending' ORDER BY d.next_attempt_at LIMIT $2`,
        [endpointId, n, h.clock.now()],
      );
    }

    test('one claim takes the room left per endpoint and the limit in all, fairly; it locks only what it takes and skips rows another worker holds', async () => {
      await h.db.query(`UPDATE deliveries SET state = 'skipped' WHERE state = 'pending'`);
      const a = await newEndpoint();
      const b = await newEndpoint();
      // Every event goes to both: 8 due deliveries each.
      for (let i = 0; i < 8; i++) await h.api('POST', '/v1/events', { type: 'shipment.created', data: { id: `claim-${i}` } });
      // Two of a's are in flight already (another worker's).
      await inFlightElsewhere(h.db, a, 2);
      // Another worker holds one of b's rows locked (PostgreSQL: the embedded engine has one connection).
      const other = engine === 'postgres' ? new pg.Client({ connectionString: h.db.url }) : undefined;
      await other?.connect();
      try {
        // b's oldest: due a second earlier than the rest, and locked by the other worker.
        const held = other
          ? (
              await other.query<{ id: string }>(
                `UPDATE deliveries SET next_attempt_at = next_attempt_at - interval '1 second'
                  WHERE id = (SELECT id FROM deliveries WHERE endpoint_id = $1 AND state = 'pending' LIMIT 1) RETURNING id`,
                [b],
              )
            ).rows[0]!.id
          : undefined;
        await other?.query('BEGIN');
        await other?.query('SELECT id FROM deliveries WHERE id = $1 FOR UPDATE', [held]);
        const { claims, lockable } = await h.db.transaction(async (tx) => {
          const claims = await claimDeliveries(tx, { now: h.clock.now(), limit: 6, leaseMs: 60_000, endpointCap: 4, originCap: 100 });
          // While the claim's transaction is open: every row it did not take can still be locked.
          const lockable = other
            ? (await other.query<{ n: number }>(`SELECT count(*)::int AS n FROM (SELECT 1 FROM deliveries WHERE state = 'pending' AND endpoint_id = ANY ($1::uuid[]) FOR UPDATE SKIP LOCKED) x`, [[a, b]])).rows[0]!.n
            : undefined;
          return { claims, lockable };
        });
        // a has room for 2 (cap 4, 2 in flight), b for 4; taken in turns, 6 in all.
        // The row another worker holds is chosen, then passed over when the
        // claim locks what it chose: that claim takes one fewer of b's.
        const taken = { a: claims.filter((c) => c.endpoint_id === a).length, b: claims.filter((c) => c.endpoint_id === b).length };
        assert.deepEqual(taken, { a: 2, b: other ? 3 : 4 });
        assert.ok(claims.every((c) => c.attempt === 1));
        if (other) {
          assert.ok(!claims.some((c) => c.id === held), 'the row another worker holds is skipped');
          assert.equal(lockable, 16 - 5, "locked: the 5 taken; the held row is the other connection's own");
        }
      } finally {
        await other?.query('ROLLBACK');
        await other?.end();
      }
      await h.api('DELETE', `/v1/endpoints/${a}`);
      await h.api('DELETE', `/v1/endpoints/${b}`);
    });

    describe('a claim behind endpoints at or near their cap', () => {
      let eventId: string;
      before(async () => {
        eventId = (await h.api('POST', '/v1/events', { type: 'shipment.created', data: { id: 'behind' } })).json.id as string;
      });

      /** `n` due deliveries of the endpoint, the first due `ageMs` ago and the rest 1 ms apart (no other rows are pending). */
      async function due(endpointId: string, n: number, ageMs: number) {
        await h.db.query(
          `INSERT INTO deliveries (id, account_id, event_id, endpoint_id, state, next_attempt_at, created_at, updated_at)
           SELECT gen_random_uuid(), e.account_id, e.id, $1, 'pending', $2::timestamptz - $3 * interval '1 ms' + i * interval '1 ms', $2, $2
             FROM events e, generate_series(0, $4::int - 1) i WHERE e.id = $5`,
          [endpointId, h.clock.now(), ageMs, n, eventId],
        );
      }
      /** One claim, in a transaction that also counts the rows of deliveries it read. */
      async function claimCounting(p: { limit: number; cap: number; inFlight: Array<[string, number]> }) {
        for (const [id, n] of p.inFlight) await inFlightElsewhere(h.db, id, n);
        const rowsRead = `SELECT (seq_tup_read + COALESCE(idx_tup_fetch, 0))::int AS n FROM pg_stat_xact_user_tables WHERE relname = 'deliveries'`;
        return h.db.transaction(async (tx) => {
          const before = (await tx.query<{ n: number }>(rowsRead)).rows[0]!.n;
          const claims = await claimDeliveries(tx, { now: h.clock.now(), limit: p.limit, leaseMs: 60_000, endpointCap: p.cap, originCap: 100 });
          const read = (await tx.query<{ n: number }>(rowsRead)).rows[0]!.n - before;
          const taken = (id: string) => claims.filter((c) => c.endpoint_id === id).length;
          return { claims, read, taken };
        });
      }

      test("an endpoint at its cap with a due backlog: the claim takes the others' rows behind it without reading the backlog", async () => {
        await h.db.query(`UPDATE deliveries SET state = 'skipped' WHERE state = 'pending'`);
        const a = await newEndpoint();
        const b = await newEndpoint();
        // 3,000 due deliveries of a, all older than b's 5: the oldest due rows are all a's.
        await due(a, 3000, 3_600_000);
        await due(b, 5, 60_000);
        await h.db.query('ANALYZE deliveries');
        const { claims, read, taken } = await claimCounting({ limit: 8, cap: 4, inFlight: [[a, 4]] });
        assert.deepEqual({ a: taken(a), b: taken(b) }, { a: 0, b: 4 }, 'b has room for 4 (its cap) and gets 4 of its 5 due rows; a, at its cap, none');
        assert.equal(claims.length, 4);
        // One probe per endpoint, a's rows in flight passed over, b's rows by key: a few dozen.
        // Reading the backlog to get past it would be 3,000.
        assert.ok(read > 0 && read < 300, `the claim read ${read} rows of deliveries`);
        await h.api('DELETE', `/v1/endpoints/${a}`);
        await h.api('DELETE', `/v1/endpoints/${b}`);
      });

      test('an endpoint with little room gets that much, and the rows behind it are reached', async () => {
        await h.db.query(`UPDATE deliveries SET state = 'skipped' WHERE state = 'pending'`);
        const a = await newEndpoint();
        const b = await newEndpoint();
        const c = await newEndpoint();
        // The oldest: a's 24 (at its cap) and c's 8 (room for 1). b's 6 come after.
        await due(a, 24, 3_600_000);
        await due(c, 8, 1_800_000);
        await due(b, 6, 60_000);
        const { taken } = await claimCounting({ limit: 8, cap: 4, inFlight: [[a, 4], [c, 3]] });
        assert.deepEqual({ a: taken(a), b: taken(b), c: taken(c) }, { a: 0, b: 4, c: 1 });
        for (const id of [a, b, c]) await h.api('DELETE', `/v1/endpoints/${id}`);
      });
    });

    describe('one recorded batch, in completion order', () => {
      /** Publishes `n` events to the endpoint and leases their deliveries, as a worker's claim would. */
      async function leased(endpointId: string, n: number) {
        for (let i = 0; i < n; i++) await h.api('POST', '/v1/events', { type: 'shipment.created', data: { id: `batch-${i}` } });
        const claims = await claimDeliveries(h.db, { now: h.clock.now(), limit: 100, leaseMs: 60_000, endpointCap: 100, originCap: 100 });
        return claims.filter((c) => c.endpoint_id === endpointId);
      }
      const OUTCOME = { failed: 'failed', succeeded: 'succeeded', pending: 'retry', skipped: 'skipped' } as const satisfies Record<string, ResultOutcome>;
      const update = (c: { id: string; lease_token: number; endpoint_id: string }, state: keyof typeof OUTCOME, lastError: string | null): DeliveryResult => ({
        deliveryId: c.id,
        leaseToken: c.lease_token,
        endpointId: c.endpoint_id,
        outcome: OUTCOME[state],
        retryInMs: state === 'pending' ? 0 : null,
        status: null,
        error: lastError,
        throttle: null,
        attempt: null,
      });
      const record = (results: DeliveryResult[], now: Date, disableAfter: number) =>
        recordResults(h.db, { results, now, disableAfter, endpointCap: 100 }).then((r) => r.disabled);

      test('a success restarts the streak, failures after it count, retries and skips do not, a late worker changes nothing', async () => {
        const id = await newEndpoint();
        await h.db.query('UPDATE endpoints SET failure_streak = 5 WHERE id = $1', [id]);
        const [a, b, c, d, e] = await leased(id, 5);
        const batch = [update(a!, 'failed', 'HTTP 500'), update(b!, 'succeeded', null), update(c!, 'failed', 'HTTP 404'), update(d!, 'pending', 'HTTP 503'), update(e!, 'skipped', null)];
        assert.deepEqual(await record(batch, h.clock.now(), 20), []);
        assert.equal((await endpoint(id)).failure_streak, 1);
        // The same batch again (a retried write): the leases are spent, nothing moves.
        await record(batch, h.clock.now(), 20);
        assert.equal((await endpoint(id)).failure_streak, 1);
        const { rows } = await h.db.query<{ state: string }>('SELECT state FROM deliveries WHERE endpoint_id = $1 ORDER BY created_at, id', [id]);
        assert.deepEqual(rows.map((r) => r.state).sort(), ['failed', 'failed', 'pending', 'skipped', 'succeeded']);
        await h.api('DELETE', `/v1/endpoints/${id}`);
      });

      test('failures without a success add to the streak; reaching the threshold disables, once, with the last error', async () => {
        const id = await newEndpoint();
        await h.db.query('UPDATE endpoints SET failure_streak = 18 WHERE id = $1', [id]);
        const [a, b, c] = await leased(id, 3);
        const now = h.clock.now();
        const disabled = await record([update(a!, 'failed', 'HTTP 410'), update(b!, 'failed', 'HTTP 401')], now, 20);
        assert.deepEqual(disabled, [id]);
        const ep = await endpoint(id);
        assert.deepEqual([ep.state, ep.failure_streak, ep.disabled_reason], ['disabled', 20, '20 consecutive failed deliveries; the last: HTTP 401']);
        // The third was in flight when the endpoint was disabled: it was skipped with the
        // endpoint's other pending deliveries, and its late answer changes nothing.
        assert.equal((await h.db.query<{ state: string }>('SELECT state FROM deliveries WHERE id = $1', [c!.id])).rows[0]!.state, 'skipped');
        assert.deepEqual(await record([update(c!, 'failed', 'HTTP 500')], new Date(now.getTime() + 1), 20), []);
        assert.equal((await endpoint(id)).failure_streak, 20);
        assert.equal((await endpoint(id)).disabled_at, now.toISOString());
        await h.api('DELETE', `/v1/endpoints/${id}`);
      });

      test('an enabled endpoint whose streak lands on the threshold again is disabled, even though the streak did not move', async () => {
        // The threshold was lowered below a streak the endpoint already had.
        const id = await newEndpoint();
        await h.db.query('UPDATE endpoints SET failure_streak = 3 WHERE id = $1', [id]);
        const [a, b, c, d] = await leased(id, 4);
        const batch = [update(a!, 'succeeded', null), update(b!, 'failed', 'HTTP 500'), update(c!, 'failed', 'HTTP 500'), update(d!, 'failed', 'HTTP 502')];
        assert.deepEqual(await record(batch, h.clock.now(), 2), [id]);
        const ep = await endpoint(id);
        assert.deepEqual([ep.state, ep.failure_streak], ['disabled', 3]);
        await h.api('DELETE', `/v1/endpoints/${id}`);
      });

      test("each attempt is logged with its delivery's account, endpoint and event, a late worker's too; one whose delivery is gone is left out; a batch written twice logs once", async () => {
        const id = await newEndpoint();
        const [a, b, c] = await leased(id, 3);
        const sent = (c: typeof a): AttemptRecord => ({
          id: crypto.randomUUID(),
          // Taken from the delivery row, not from here:
          accountId: '00000000-0000-4000-8000-000000000000',
          endpointId: '00000000-0000-4000-8000-000000000000',
          deliveryId: c!.id,
          eventId: '00000000-0000-4000-8000-000000000000',
          eventType: 'shipment.created',
          attemptNumber: 1,
          isTest: false,
          startedAt: h.clock.now(),
          durationMs: 12,
          statusCode: 204,
          outcome: 'succeeded',
          error: null,
          url: receiver.url,
          signature: 'v1=00',
          responseExcerpt: Buffer.from('ok'),
          testBody: null,
        });
        await h.db.query('DELETE FROM deliveries WHERE id = $1', [b!.id]);
        // c's lease ran out and another worker claimed it again: a new token.
        await h.db.query('UPDATE in_flight SET lease_token = lease_token + 1000 WHERE delivery_id = $1', [c!.id]);
        const batch = [a, b, c].map((x) => ({ ...update(x!, 'succeeded', null), attempt: sent(x) }));
        await record(batch, h.clock.now(), 20);
        await record(batch, h.clock.now(), 20);
        const { rows } = await h.db.query<{ delivery_id: string; account_id: string; endpoint_id: string; event_id: string; response_excerpt: Buffer; signature: string }>(
          'SELECT delivery_id, account_id, endpoint_id, event_id, response_excerpt, signature FROM attempts WHERE endpoint_id = $1 OR delivery_id = ANY ($2::uuid[]) ORDER BY delivery_id = $3 DESC',
          [id, [a!.id, b!.id, c!.id], a!.id],
        );
        const logged = (x: typeof a) => ({ delivery_id: x!.id, account_id: h.accountId, endpoint_id: id, event_id: x!.event_id, response_excerpt: 'ok', signature: 'v1=00' });
        assert.deepEqual(
          rows.map((r) => ({ ...r, response_excerpt: r.response_excerpt.toString() })),
          [logged(a), logged(c)],
        );
        // The late worker's result changed nothing: c is still the other worker's.
        const states = await h.db.query<{ id: string; state: string }>('SELECT id, state FROM deliveries WHERE id = ANY ($1::uuid[])', [[a!.id, c!.id]]);
        assert.deepEqual(Object.fromEntries(states.rows.map((r) => [r.id, r.state])), { [a!.id]: 'succeeded', [c!.id]: 'pending' });
        await h.api('DELETE', `/v1/endpoints/${id}`);
      });
    });
  });
}
