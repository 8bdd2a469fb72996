import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Db, Queryable } from '../src/storage/db.ts';
import { openPostgres } from '../src/storage/postgres.ts';
import { claimDeliveries, giveBackClaim, nextDueIn, reapAllLeases, type ClaimedDelivery } from '../src/storage/queries/claim-deliveries.ts';
import { recordResults, skipPendingDeliveries, type AttemptRecord, type DeliveryResult, type ResultOutcome } from '../src/storage/queries/record-results.ts';
import { databaseTime, systemClock } from '../src/core/clock.ts';
import { createTestDb, ENGINES, type TestDb } from './helpers/engines.ts';
import { createTestClock } from './helpers/clock.ts';

/**
 * The claim and the record step at the query level, on real databases: the
 * caps across workers, the rate limit and slow-down, lost leases, fencing and
 * the database's clock. No dispatcher runs; the tests claim and record by hand.
 */

const T0 = new Date('2026-11-20T08:00:00.000Z');
const LEASE_MS = 60_000;
const LOST_REASON =
  'stopped after 3 attempts that never finished: each time, the worker sending it stopped (crashed, was killed or lost the database) before the receiver answered';

const at = (ms: number) => new Date(T0.getTime() + ms);

test("databaseTime: null (the database's clock) for the system clock, a test clock's own time otherwise", () => {
  assert.equal(databaseTime(systemClock), null);
  const clock = createTestClock(T0);
  assert.equal(databaseTime(clock.now)?.getTime(), T0.getTime());
});

for (const engine of ENGINES) {
  describe(`claiming and recording in_flight work [${engine}]`, () => {
    let db: TestDb;
    /** A second worker's own pool on PostgreSQL, so its claims run beside the first's; the same database on PGlite. */
    let other: Db;
    let account: string;

    before(async () => {
      db = await createTestDb(engine);
      other = engine === 'postgres' ? await openPostgres({ connectionString: db.url!, max: 4 }) : db;
    });
    after(async () => {
      if (other !== db) await other.close();
      await db.close();
    });
    beforeEach(async () => {
      await db.exec('TRUNCATE in_flight, attempts, deliveries, events, endpoints, accounts CASCADE');
      account = randomUUID();
      await db.query(`INSERT INTO accounts (id, name) VALUES ($1, 'Claim Co')`, [account]);
    });

    async function addEndpoint(p: { host?: string; rateLimit?: number; failureStreak?: number } = {}): Promise<string> {
      const id = randomUUID();
      const host = p.host ?? `${id.slice(0, 8)}.example.com`;
      await db.query(
        `INSERT INTO endpoints (id, account_id, url, origin, event_types, secret_encrypted, secret_hint, rate_limit, failure_streak)
         VALUES ($1, $2, $3, $4, '{alarm.created}', '\\x00', 'whsec_…', $5, $6)`,
        [id, account, `https://${host}/hook/${id}`, `https://${host}`, p.rateLimit ?? null, p.failureStreak ?? 0],
      );
      return id;
    }

    /** `n` deliveries of one new event to the endpoint, due from `due` on (a minute before T0 unless given), a millisecond apart (oldest first). */
    async function addDeliveries(endpointId: string, n: number, due: Date | null = at(-60_000)): Promise<string[]> {
      const event = randomUUID();
      await db.query(
        `INSERT INTO events (account_id, id, type, created_at, body, request_hash) VALUES ($1, $2, 'alarm.created', now(), convert_to('{"hello":"world"}', 'UTF8'), '\\x00')`,
        [account, event],
      );
      const { rows } = await db.query<{ id: string }>(
        `INSERT INTO deliveries (id, account_id, event_id, endpoint_id, state, next_attempt_at, created_at, updated_at)
         SELECT gen_random_uuid(), $1, $2, $3, 'pending', COALESCE($5::timestamptz, now()) + i * interval '1 millisecond', now(), now()
           FROM generate_series(0, $4 - 1) AS i
         RETURNING id`,
        [account, event, endpointId, n, due],
      );
      return rows.map((r) => r.id);
    }

    const claim = (q: Queryable, now: Date | null, p: { limit?: number; endpointCap?: number; originCap?: number; leaseMs?: number } = {}) =>
      claimDeliveries(q, { limit: p.limit ?? 100, leaseMs: p.leaseMs ?? LEASE_MS, endpointCap: p.endpointCap ?? 64, originCap: p.originCap ?? 64, now });

    function attemptOf(c: ClaimedDelivery, status: number | null, outcome: AttemptRecord['outcome'], startedAt: Date): AttemptRecord {
      return {
        id: randomUUID(),
        accountId: c.account_id,
        endpointId: c.endpoint_id,
        deliveryId: c.id,
        eventId: c.event_id,
        eventType: c.type,
        attemptNumber: c.attempt,
        isTest: false,
        startedAt,
        durationMs: 5,
        statusCode: status,
        outcome,
        error: status !== null && status >= 300 ? `HTTP ${status}` : null,
        url: c.url,
        signature: 'v1,abc',
        responseExcerpt: null,
        testBody: null,
      };
    }

    /** The result of an answered request (or, for 'skipped'/'given_back', of none). */
    function result(c: ClaimedDelivery, outcome: ResultOutcome, p: { status?: number | null; retryInMs?: number; retryAfterMs?: number | null; now?: Date } = {}): DeliveryResult {
      const sent = outcome === 'succeeded' || outcome === 'retry' || outcome === 'failed';
      const status = p.status ?? (outcome === 'succeeded' ? 204 : sent ? 500 : null);
      const attemptOutcome = outcome === 'succeeded' ? 'succeeded' : outcome === 'retry' ? 'retrying' : 'failed';
      return {
        deliveryId: c.id,
        leaseToken: c.lease_token,
        endpointId: c.endpoint_id,
        outcome,
        retryInMs: outcome === 'retry' ? (p.retryInMs ?? 0) : null,
        status: sent ? status : null,
        error: sent && status !== null && status >= 300 ? `HTTP ${status}` : outcome === 'skipped' ? 'endpoint disabled' : null,
        throttle: p.retryAfterMs !== undefined ? { retryAfterMs: p.retryAfterMs } : null,
        attempt: sent ? attemptOf(c, status, attemptOutcome, p.now ?? T0) : null,
      };
    }

    const record = (results: DeliveryResult[], now: Date | null, p: { disableAfter?: number; endpointCap?: number } = {}) =>
      recordResults(db, { results, now, disableAfter: p.disableAfter ?? 20, endpointCap: p.endpointCap ?? 64 });

    const inFlightTo = async (endpointId: string) =>
      (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM in_flight WHERE endpoint_id = $1', [endpointId])).rows[0]!.n;

    const delivery = async (id: string) =>
      (
        await db.query<{ state: string; attempts: number; lost_attempts: number; next_attempt_at: Date; last_error: string | null; last_status: number | null }>(
          'SELECT state, attempts, lost_attempts, next_attempt_at, last_error, last_status FROM deliveries WHERE id = $1',
          [id],
        )
      ).rows[0]!;

    const endpoint = async (id: string) =>
      (
        await db.query<{ failure_streak: number; enabled: boolean; disabled_reason: string | null; throttled_until: Date | null; throttle_limit: number | null; rate_tat: Date | null }>(
          'SELECT failure_streak, enabled, disabled_reason, throttled_until, throttle_limit, (SELECT tat FROM endpoint_rates WHERE endpoint_id = id) AS rate_tat FROM endpoints WHERE id = $1',
          [id],
        )
      ).rows[0]!;

    test('a claim returns what the worker needs: attempt number, token, body once per event, url and origin', async () => {
      const ep = await addEndpoint({ host: 'shape.example.com' });
      const ep2 = await addEndpoint({ host: 'shape.example.com' });
      const [d1] = await addDeliveries(ep, 1);
      const event = (await db.query<{ event_id: string }>('SELECT event_id FROM deliveries WHERE id = $1', [d1])).rows[0]!.event_id;
      await db.query(
        `INSERT INTO deliveries (id, account_id, event_id, endpoint_id, state, next_attempt_at, created_at, updated_at)
         VALUES (gen_random_uuid(), $1, $2, $3, 'pending', $4, now(), now())`,
        [account, event, ep2, T0],
      );
      const claimed = await claim(db, T0);
      assert.equal(claimed.length, 2);
      for (const c of claimed) {
        assert.equal(c.attempt, 1);
        assert.equal(typeof c.lease_token, 'number');
        assert.equal(c.origin, 'https://shape.example.com');
        assert.equal(c.type, 'alarm.created');
        assert.equal(c.enabled, true);
        assert.ok(Buffer.isBuffer(c.secret_encrypted));
        assert.equal(c.body.toString('utf8'), '{"hello":"world"}');
      }
      assert.equal(claimed[0]!.body, claimed[1]!.body, 'one Buffer for both deliveries of the event');
      const lease = (await db.query<{ lease_until: Date }>('SELECT lease_until FROM in_flight WHERE delivery_id = $1', [d1])).rows[0]!;
      assert.equal(lease.lease_until.getTime(), T0.getTime() + LEASE_MS);
      assert.deepEqual(await claim(db, at(1000)), [], 'in flight: not claimed again');
    });

    test('the per-endpoint cap holds across two workers claiming at once', async () => {
      const ep = await addEndpoint();
      await addDeliveries(ep, 50);
      const rounds = await Promise.all(
        Array.from({ length: 8 }, (_, i) => claim(i % 2 === 0 ? db : other, at(i), { endpointCap: 5, limit: 3 })),
      );
      const claimed = rounds.flat();
      assert.equal(claimed.length, 5, `claimed ${rounds.map((r) => r.length).join('+')}`);
      assert.equal(new Set(claimed.map((c) => c.id)).size, 5, 'no delivery twice');
      assert.equal(await inFlightTo(ep), 5);
      // Finishing one frees one place, whichever worker claims next.
      const { applied } = await record([result(claimed[0]!, 'succeeded')], at(10));
      assert.deepEqual([...applied], [claimed[0]!.id]);
      assert.equal((await claim(other, at(20), { endpointCap: 5 })).length, 1);
      assert.equal(await inFlightTo(ep), 5);
    });

    test('the per-origin cap holds across endpoints that share an origin, and across workers', async () => {
      const shared = await Promise.all([1, 2, 3].map(() => addEndpoint({ host: 'shared.example.com' })));
      const alone = await addEndpoint({ host: 'alone.example.com' });
      for (const ep of shared) await addDeliveries(ep, 10);
      await addDeliveries(alone, 10);
      const rounds = await Promise.all(
        Array.from({ length: 6 }, (_, i) => claim(i % 2 === 0 ? db : other, at(i), { endpointCap: 10, originCap: 4, limit: 5 })),
      );
      const claimed = rounds.flat();
      const toShared = claimed.filter((c) => c.origin === 'https://shared.example.com');
      assert.equal(toShared.length, 4, 'four to the shared origin, from its three endpoints together');
      assert.equal(claimed.filter((c) => c.endpoint_id === alone).length, 4, 'the other origin has its own four');
      const { rows } = await db.query<{ origin: string; n: number }>('SELECT origin, count(*)::int AS n FROM in_flight GROUP BY origin ORDER BY origin');
      assert.deepEqual(rows.map((r) => [r.origin, r.n]), [
        ['https://alone.example.com', 4],
        ['https://shared.example.com', 4],
      ]);
    });

    test("an origin's room goes to its endpoints in turns: one endpoint's old backlog does not take all of it", async () => {
      const backlogged = await addEndpoint({ host: 'shared.example.com' });
      const fresh = await addEndpoint({ host: 'shared.example.com' });
      await addDeliveries(backlogged, 10, at(-3_600_000));
      const [due] = await addDeliveries(fresh, 1, at(-1));
      const claimed = await claim(db, T0, { endpointCap: 2, originCap: 2 });
      assert.equal(claimed.length, 2);
      assert.deepEqual(claimed.filter((c) => c.endpoint_id === fresh).map((c) => c.id), [due], 'the fresh endpoint gets a turn');
    });

    test("endpoints behind one origin share its room in turns, each reading only a share of it, and the claim fills the room", async () => {
      const endpoints = await Promise.all(Array.from({ length: 10 }, () => addEndpoint({ host: 'shared.example.com' })));
      for (const ep of endpoints) await addDeliveries(ep, 20);
      const claimed = await claim(db, T0, { originCap: 64, endpointCap: 64, limit: 100 });
      assert.equal(claimed.length, 64, "the origin's whole room");
      const perEndpoint = endpoints.map((ep) => claimed.filter((c) => c.endpoint_id === ep).length);
      assert.ok(perEndpoint.every((n) => n === 6 || n === 7), `each endpoint gets its turns: ${perEndpoint.join(', ')}`);
    });

    test("an endpoint with a backlog fills its origin's room once the origin's other endpoints have nothing more to send", async () => {
      const backlogged = await addEndpoint({ host: 'shared.example.com' });
      const quiet = await Promise.all(Array.from({ length: 9 }, () => addEndpoint({ host: 'shared.example.com' })));
      await addDeliveries(backlogged, 100);
      for (const ep of quiet) await addDeliveries(ep, 1);
      // Ten endpoints with due rows: the backlogged one reads twice its share
      // (14 rows), the quiet ones their one each.
      const first = await claim(db, T0, { originCap: 64, endpointCap: 64, limit: 100 });
      assert.equal(first.length, 23);
      // The quiet endpoints' rows are all in flight: they take no share now.
      const second = await claim(other, at(1), { originCap: 64, endpointCap: 64, limit: 100 });
      assert.equal(second.length, 41, "the rest of the origin's room");
      assert.ok(second.every((c) => c.endpoint_id === backlogged));
    });

    test("an endpoint at its cap with a 5,000-row backlog does not hide another endpoint's due row", async () => {
      const busy = await addEndpoint();
      const quiet = await addEndpoint();
      await addDeliveries(busy, 5000, at(-3_600_000));
      const first = await claim(db, T0, { endpointCap: 5 });
      assert.equal(first.length, 5);
      const [due] = await addDeliveries(quiet, 1, T0);
      const second = await claim(other, at(1), { endpointCap: 5, limit: 10 });
      assert.deepEqual(
        second.map((c) => c.id),
        [due],
      );
    });

    test('a rate limit of 5/s: at most 5 plus a burst of 5 within a second, more as time passes', async () => {
      const ep = await addEndpoint({ rateLimit: 5 });
      await addDeliveries(ep, 200);
      const take = (ms: number) => claim(db, at(ms), { limit: 100, endpointCap: 500, originCap: 500 }).then((c) => c.length);
      let withinASecond = 0;
      for (let ms = 0; ms <= 1000; ms += 100) withinASecond += await take(ms);
      assert.ok(withinASecond <= 10, `${withinASecond} claimed within one second`);
      assert.ok(withinASecond >= 5, `${withinASecond} claimed within one second`);
      const later = await take(3000);
      assert.ok(later >= 5 && later <= 15, `${later} claimed after two more seconds`);
      // Over a long stretch it averages the rate.
      let total = withinASecond + later;
      for (let s = 4; s <= 20; s += 1) total += await take(s * 1000);
      assert.ok(total <= 5 * 21 + 5, `${total} in 20 s`);
      assert.ok(total >= 5 * 20, `${total} in 20 s`);
    });

    test('a 429 with Retry-After slows the endpoint down: no claim before it passes, the limit halves, and each 2xx raises it by one', async () => {
      const ep = await addEndpoint();
      await addDeliveries(ep, 40);
      const [c] = await claim(db, T0, { endpointCap: 8, limit: 1 });
      await record([result(c!, 'retry', { status: 429, retryAfterMs: 10_000 })], at(100), { endpointCap: 8 });
      const slowed = await endpoint(ep);
      assert.equal(slowed.throttled_until?.getTime(), at(10_100).getTime());
      assert.equal(slowed.throttle_limit, 4);
      assert.equal(slowed.failure_streak, 0, 'a retry is not a failed delivery');
      assert.deepEqual(await claim(db, at(5000), { endpointCap: 8 }), [], 'nothing before Retry-After passes');
      const after = await claim(db, at(10_100), { endpointCap: 8 });
      assert.equal(after.length, 4, 'then at most the halved limit');
      await record([result(after[0]!, 'succeeded')], at(10_200), { endpointCap: 8 });
      assert.equal((await endpoint(ep)).throttle_limit, 5);
      assert.equal((await claim(db, at(10_300), { endpointCap: 8 })).length, 2, 'room for five now, three still in flight');
      // Five more 2xx answers (no attempts to log here): 6, 7, then the cap, where the slow-down ends.
      const inFlight = (await db.query<{ delivery_id: string; lease_token: number }>('SELECT delivery_id, lease_token FROM in_flight WHERE endpoint_id = $1', [ep])).rows;
      assert.equal(inFlight.length, 5);
      const answers = inFlight.map(
        (f): DeliveryResult => ({ deliveryId: f.delivery_id, leaseToken: f.lease_token, endpointId: ep, outcome: 'succeeded', retryInMs: null, status: 200, error: null, throttle: null, attempt: null }),
      );
      await record(answers, at(10_400), { endpointCap: 8 });
      const back = await endpoint(ep);
      assert.equal(back.throttle_limit, null, 'back to the full cap after enough 2xx answers');
      // A 503 without Retry-After holds it for the default 5 s.
      const [d] = await claim(db, at(20_000), { endpointCap: 8, limit: 1 });
      await record([result(d!, 'retry', { status: 503, retryAfterMs: null })], at(20_000), { endpointCap: 8 });
      const again = await endpoint(ep);
      assert.equal(again.throttled_until?.getTime(), at(25_000).getTime());
      assert.equal(again.throttle_limit, 4);
    });

    test('many 429s in one recorded batch are one congestion event: the limit halves once, not once per answer', async () => {
      const ep = await addEndpoint();
      await addDeliveries(ep, 10);
      const claimed = await claim(db, T0, { endpointCap: 64 });
      assert.equal(claimed.length, 10);
      await record(claimed.map((c) => result(c, 'retry', { status: 429, retryAfterMs: 2_000 })), at(100), { endpointCap: 64 });
      assert.equal((await endpoint(ep)).throttle_limit, 32);
    });

    test('a lost lease: lost_attempts counts it, attempts and the failure streak do not; due again after the back-off; failed after 3', async () => {
      const ep = await addEndpoint({ failureStreak: 5 });
      const [id] = await addDeliveries(ep, 1);
      const [first] = await claim(db, T0, { leaseMs: 10_000 });
      assert.equal(first?.id, id);
      // The worker died: at the lease's end the next claim reaps it.
      assert.deepEqual(await claim(db, at(10_000)), []);
      let d = await delivery(id!);
      assert.equal(d.state, 'pending');
      assert.equal(d.lost_attempts, 1);
      assert.equal(d.attempts, 0);
      assert.equal(d.next_attempt_at.getTime(), at(40_000).getTime(), '30 s after the reaping');
      assert.equal(await inFlightTo(ep), 0);
      assert.deepEqual(await claim(db, at(39_999)), [], 'not before the back-off');
      const [second] = await claim(db, at(40_000), { leaseMs: 10_000 });
      assert.equal(second?.attempt, 1, 'still its first attempt');
      assert.deepEqual(await claim(db, at(50_000)), []);
      d = await delivery(id!);
      assert.equal(d.lost_attempts, 2);
      assert.equal(d.next_attempt_at.getTime(), at(110_000).getTime(), '60 s after the second');
      await claim(db, at(110_000), { leaseMs: 10_000 });
      assert.deepEqual(await claim(db, at(120_000)), []);
      d = await delivery(id!);
      assert.equal(d.state, 'failed');
      assert.equal(d.lost_attempts, 3);
      assert.equal(d.attempts, 0);
      assert.equal(d.last_error, LOST_REASON);
      const e = await endpoint(ep);
      assert.equal(e.failure_streak, 5, 'the streak is left alone');
      assert.equal(e.enabled, true);
    });

    test('a claim given back leaves in_flight with no loss counted, and one given back before the server runs it takes nothing', async () => {
      const ep = await addEndpoint();
      const ids = await addDeliveries(ep, 3);
      const first = randomUUID();
      assert.equal((await claimDeliveries(db, { limit: 2, leaseMs: LEASE_MS, endpointCap: 64, originCap: 64, now: T0, claimId: first })).length, 2);
      assert.equal(await giveBackClaim(db, first), 2);
      assert.equal(await inFlightTo(ep), 0);
      for (const id of ids) assert.deepEqual([(await delivery(id)).lost_attempts, (await delivery(id)).state], [0, 'pending']);
      // The give-back came first (the claim was still on its way to the server): the claim then takes nothing.
      const late = randomUUID();
      assert.equal(await giveBackClaim(db, late), 0);
      assert.deepEqual(await claimDeliveries(db, { limit: 10, leaseMs: LEASE_MS, endpointCap: 64, originCap: 64, now: T0, claimId: late }), []);
      assert.equal((await claim(db, T0)).length, 3, 'another claim takes them all');
    });

    test('reapAllLeases ends every lease at once, as the claim does expired ones', async () => {
      const ep = await addEndpoint();
      const ids = await addDeliveries(ep, 3);
      await claim(db, T0);
      assert.equal(await reapAllLeases(db, at(1000)), 3);
      assert.equal(await inFlightTo(ep), 0);
      for (const id of ids) assert.equal((await delivery(id)).lost_attempts, 1);
    });

    test('an attempt row keeps what the worker sent: its start to the millisecond, an empty, absent or odd excerpt, an error with quotes and commas', async () => {
      const ep = await addEndpoint();
      await addDeliveries(ep, 3);
      const [a, b, c] = await claim(db, T0);
      const startedAt = new Date('2026-11-26T12:34:56.789Z');
      const withExcerpt = (r: DeliveryResult, excerpt: Buffer | null, error: string | null): DeliveryResult => ({
        ...r,
        error,
        attempt: { ...r.attempt!, startedAt, responseExcerpt: excerpt, error },
      });
      const odd = Buffer.from('{"a": "b,c"} \\ NULL \n', 'utf8');
      const results = [
        withExcerpt(result(a!, 'failed', { status: 400 }), odd, 'HTTP 400: "bad", {very} bad'),
        withExcerpt(result(b!, 'failed', { status: 400 }), Buffer.alloc(0), 'NULL'),
        withExcerpt(result(c!, 'succeeded'), null, null),
      ];
      await record(results, at(1));
      const { rows } = await db.query<{ id: string; started_at: Date; response_excerpt: Buffer | null; error: string | null }>(
        'SELECT id, started_at, response_excerpt, error FROM attempts WHERE endpoint_id = $1',
        [ep],
      );
      const byId = new Map(rows.map((r) => [r.id, r]));
      const row = (r: DeliveryResult) => byId.get(r.attempt!.id)!;
      assert.equal(rows.length, 3);
      for (const r of results) assert.equal(row(r).started_at.getTime(), startedAt.getTime());
      assert.deepEqual(row(results[0]!).response_excerpt, odd);
      assert.equal(row(results[0]!).error, 'HTTP 400: "bad", {very} bad');
      assert.deepEqual(row(results[1]!).response_excerpt, Buffer.alloc(0));
      assert.equal(row(results[1]!).error, 'NULL', 'the text NULL, not a missing error');
      assert.equal(row(results[2]!).response_excerpt, null);
      assert.equal(row(results[2]!).error, null);
    });

    test('fencing: a result with a stale lease token changes nothing, but its attempt is logged', async () => {
      const ep = await addEndpoint();
      const [id] = await addDeliveries(ep, 1);
      const [stale] = await claim(db, T0, { leaseMs: 10_000 });
      await claim(db, at(10_000)); // reaped: lost once, due 30 s later
      const [fresh] = await claim(other, at(40_000));
      assert.equal(fresh?.id, id);
      assert.notEqual(fresh!.lease_token, stale!.lease_token);

      const late = result(stale!, 'succeeded', { now: T0 });
      const { applied, disabled } = await record([late], at(41_000));
      assert.equal(applied.size, 0);
      assert.deepEqual(disabled, []);
      const d = await delivery(id!);
      assert.equal(d.state, 'pending');
      assert.equal(d.attempts, 0);
      assert.equal(await inFlightTo(ep), 1, "the other worker's lease stands");
      const logged = (await db.query<{ id: string }>('SELECT id FROM attempts WHERE delivery_id = $1', [id])).rows;
      assert.deepEqual(logged.map((r) => r.id), [late.attempt!.id]);

      const now = await record([result(fresh!, 'retry', { retryInMs: 60_000 })], at(42_000));
      assert.deepEqual([...now.applied], [id]);
      const after = await delivery(id!);
      assert.equal(after.attempts, 1);
      assert.equal(after.next_attempt_at.getTime(), at(102_000).getTime());
      assert.equal(after.last_status, 500);
      const [retried] = await claim(db, at(102_000));
      assert.deepEqual([retried?.id, retried?.attempt], [id, 2], 'claimed again for its second attempt');
    });

    test('skips and given-back deliveries spend no attempt; failed deliveries disable the endpoint at the threshold and skip its pending ones', async () => {
      const ep = await addEndpoint();
      const ids = await addDeliveries(ep, 5);
      const claimed = await claim(db, T0, { limit: 3 });
      const [a, b, c] = claimed;
      await record([result(a!, 'given_back'), result(b!, 'skipped')], at(1000));
      const givenBack = await delivery(a!.id);
      assert.deepEqual([givenBack.state, givenBack.attempts, givenBack.next_attempt_at.getTime()], ['pending', 0, at(1000).getTime()]);
      const skipped = await delivery(b!.id);
      assert.deepEqual([skipped.state, skipped.attempts], ['skipped', 0]);
      assert.equal((await endpoint(ep)).failure_streak, 0);

      const [d] = (await claim(db, at(2000), { limit: 3 })).filter((x) => x.id === a!.id);
      const { disabled } = await record([result(c!, 'failed', { status: 410 }), result(d!, 'failed', { status: 401 })], at(3000), { disableAfter: 2 });
      assert.deepEqual(disabled, [ep]);
      const e = await endpoint(ep);
      assert.equal(e.enabled, false);
      assert.equal(e.disabled_reason, '2 consecutive failed deliveries; the last: HTTP 401');
      const states = await db.query<{ state: string; n: number }>('SELECT state, count(*)::int AS n FROM deliveries WHERE id = ANY ($1::uuid[]) GROUP BY state ORDER BY state', [ids]);
      assert.deepEqual(states.rows.map((r) => [r.state, r.n]), [
        ['failed', 2],
        ['skipped', 3],
      ]);
      assert.equal(await inFlightTo(ep), 0);
    });

    test('recording and disabling an endpoint by hand lock in one order (the endpoint first): they wait for each other instead of deadlocking', { skip: engine !== 'postgres' }, async () => {
      const ep = await addEndpoint();
      await addDeliveries(ep, 3);
      const claimed = await claim(db, T0);
      let recording: Promise<unknown> | undefined;
      await other.transaction(async (tx) => {
        // The disable (endpoint-state.ts): the endpoint first, then its pending deliveries.
        await tx.query(`UPDATE endpoints SET enabled = false WHERE id = $1`, [ep]);
        recording = record(claimed.map((c) => result(c, 'retry', { retryInMs: 1_000 })), at(1000));
        // Until the recording waits for a lock (bounded).
        for (let i = 0; ; i++) {
          const { rows } = await db.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
          );
          if (rows[0]!.n > 0) break;
          assert.ok(i < 500, 'the recording never waited for the disable');
          await new Promise((r) => setTimeout(r, 10));
        }
        await skipPendingDeliveries(tx, [ep], at(1000));
      });
      const written = (await recording) as { applied: Set<string> };
      assert.equal(written.applied.size, 0, 'the disable came first: the results are late');
      const states = await db.query<{ state: string; n: number }>(`SELECT state, count(*)::int AS n FROM deliveries WHERE endpoint_id = $1 GROUP BY state`, [ep]);
      assert.deepEqual(states.rows, [{ state: 'skipped', n: 3 }]);
    });

    test('recording does not wait for a publish that holds its endpoint (FOR KEY SHARE): the two must not block or deadlock each other', { skip: engine !== 'postgres' }, async () => {
      const ep = await addEndpoint();
      await addDeliveries(ep, 2);
      const claimed = await claim(db, T0);
      await other.transaction(async (tx) => {
        // What a publish holds on each endpoint it fans out to, until it commits.
        await tx.query(`SELECT id FROM endpoints WHERE id = $1 FOR KEY SHARE`, [ep]);
        let timer: NodeJS.Timeout | undefined;
        const written = await Promise.race([
          record(claimed.map((c) => result(c, 'succeeded', { status: 204 })), at(1000)),
          new Promise<'blocked'>((r) => (timer = setTimeout(() => r('blocked'), 3_000))),
        ]);
        clearTimeout(timer);
        assert.notEqual(written, 'blocked', 'the recording waited for the publish to commit');
      });
    });

    test('a claim that takes a rate-limited endpoint\'s deliveries while it is being disabled does not deadlock with the disable', { skip: engine !== 'postgres' }, async () => {
      const ep = await addEndpoint({ rateLimit: 100 });
      await addDeliveries(ep, 3);
      let claiming: Promise<ClaimedDelivery[]> | undefined;
      await other.transaction(async (tx) => {
        // The disable (endpoint-state.ts): the endpoint first, then its pending deliveries.
        await tx.query(`UPDATE endpoints SET enabled = false WHERE id = $1`, [ep]);
        claiming = claim(db, T0);
        let done = false;
        void claiming.then(() => (done = true), () => (done = true));
        // Until the claim has finished or waits for a lock (bounded).
        for (let i = 0; !done; i++) {
          // A transaction keeps its first look at pg_stat_activity unless told to look again.
          await tx.query('SELECT pg_stat_clear_snapshot()');
          const { rows } = await tx.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
          );
          if (rows[0]!.n > 0) break;
          assert.ok(i < 500, 'the claim neither finished nor waited');
          await new Promise((r) => setTimeout(r, 10));
        }
        await skipPendingDeliveries(tx, [ep], T0);
      });
      assert.equal((await claiming!).length, 3, 'the claim took them before the disable committed');
      assert.equal(await inFlightTo(ep), 0, 'the disable ended their leases');
      const states = await db.query<{ state: string; n: number }>(`SELECT state, count(*)::int AS n FROM deliveries WHERE endpoint_id = $1 GROUP BY state`, [ep]);
      assert.deepEqual(states.rows, [{ state: 'skipped', n: 3 }]);
    });

    test('with now: null, leases and due times follow the database clock, whatever the caller thinks the time is', async () => {
      const ep = await addEndpoint();
      const [id] = await addDeliveries(ep, 1, null);
      const [c] = await claim(db, null, { leaseMs: 30_000 });
      assert.equal(c?.id, id, 'due by the database clock (a test clock in 2026 would not matter either way)');
      const { rows } = await db.query<{ lease_until: Date; now: Date }>('SELECT f.lease_until, now() AS now FROM in_flight f WHERE f.delivery_id = $1', [id]);
      const drift = rows[0]!.lease_until.getTime() - 30_000 - rows[0]!.now.getTime();
      assert.ok(drift <= 0 && drift > -10_000, `lease_until is the database's now + the lease (off by ${drift} ms)`);

      await record([result(c!, 'retry', { retryInMs: 120_000 })], null);
      const due = await delivery(id!);
      const dbNow = (await db.query<{ now: Date }>('SELECT now() AS now')).rows[0]!.now;
      const ahead = due.next_attempt_at.getTime() - dbNow.getTime();
      assert.ok(ahead > 110_000 && ahead <= 120_000, `due 120 s after the database's now (${ahead} ms)`);
      const wait = await nextDueIn(db, null);
      assert.ok(wait !== undefined && wait > 110_000 && wait <= 120_000, `nextDueIn ${wait}`);
      assert.equal(await nextDueIn(db, new Date(due.next_attempt_at.getTime() + 1)), 0, 'due now');
      await db.query(`UPDATE deliveries SET state = 'succeeded' WHERE id = $1`, [id]);
      assert.equal(await nextDueIn(db, null), undefined, 'nothing pending');
    });
  });
}
