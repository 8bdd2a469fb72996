import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ENGINES } from './helpers/engines.ts';
import { createTestHerald, type TestHerald } from './helpers/herald.ts';

/**
 * What an endpoint's owner sees of per-endpoint throttling and of retention:
 * the rate limit they set, the automatic slow-down the scheduler applies
 * after a 429 or 503 (written here straight into the columns the scheduler
 * writes), and how far back history and recovery reach.
 */
const DAY = 86_400_000;

for (const engine of ENGINES) {
  describe(`endpoint rate limit, slow-down and retention [${engine}]`, () => {
    let h: TestHerald;
    before(async () => {
      h = await createTestHerald(engine);
    });
    after(async () => {
      await h.close();
    });

    const create = (body: Record<string, unknown> = {}) =>
      h.api('POST', '/v1/endpoints', { url: 'https://hooks.example.com/herald', event_types: ['alarm.created'], ...body });

    test('a rate limit is set on create, shown, changed and cleared with PATCH, and left alone when not named', async () => {
      const created = await create({ rate_limit: 50 });
      assert.equal(created.status, 201);
      assert.equal(created.json.rate_limit, 50);
      const id = created.json.id;
      assert.equal((await h.api('GET', `/v1/endpoints/${id}`)).json.rate_limit, 50);

      const changed = await h.api('PATCH', `/v1/endpoints/${id}`, { rate_limit: 10_000 });
      assert.equal(changed.status, 200);
      assert.equal(changed.json.rate_limit, 10_000);
      const untouched = await h.api('PATCH', `/v1/endpoints/${id}`, { description: 'orders' });
      assert.equal(untouched.json.rate_limit, 10_000, 'a PATCH without rate_limit keeps it');
      const cleared = await h.api('PATCH', `/v1/endpoints/${id}`, { rate_limit: null });
      assert.equal(cleared.status, 200);
      assert.equal(cleared.json.rate_limit, null);
      const stored = await h.db.query<{ rate_limit: number | null }>('SELECT rate_limit FROM endpoints WHERE id = $1', [id]);
      assert.equal(stored.rows[0]!.rate_limit, null);

      const none = await create();
      assert.equal(none.json.rate_limit, null, 'no limit unless one is set');
      const explicitNone = await create({ rate_limit: null });
      assert.equal(explicitNone.status, 201);
      assert.equal(explicitNone.json.rate_limit, null);
    });

    test('a rate limit that is not a whole number from 1 to 10,000 is refused, naming the field, and changes nothing', async () => {
      const id = (await create({ rate_limit: 5 })).json.id;
      for (const value of [0, -1, 10_001, 1.5, 1e20, "10", true, [], {}]) {
        for (const [method, url] of [
          ['POST', '/v1/endpoints'],
          ['PATCH', `/v1/endpoints/${id}`],
        ] as const) {
          const body = method === 'POST' ? { url: 'https://hooks.example.com/x', event_types: ['alarm.created'], rate_limit: value } : { rate_limit: value };
          const res = await h.api(method, url, body);
          assert.equal(res.status, 400, `${method} ${JSON.stringify(value)}`);
          assert.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8');
          assert.equal(res.json.code, 'validation_failed');
          assert.deepEqual(res.json.errors, [
            { field: 'rate_limit', message: 'must be a whole number of requests per second from 1 to 10,000, or null for no limit' },
          ]);
          assert.match(res.json.detail, /^rate_limit: /);
        }
      }
      assert.equal((await h.api('GET', `/v1/endpoints/${id}`)).json.rate_limit, 5);
    });

    test('the slow-down is null until the scheduler sets it, then shows its end and its cap; a passed end leaves the cap', async () => {
      const id = (await create()).json.id;
      assert.equal((await h.api('GET', `/v1/endpoints/${id}`)).json.throttle, null);

      const until = new Date(h.clock.now().getTime() + 30_000);
      await h.db.query('UPDATE endpoints SET throttled_until = $2, throttle_limit = 4 WHERE id = $1', [id, until]);
      const slowed = await h.api('GET', `/v1/endpoints/${id}`);
      assert.deepEqual(slowed.json.throttle, { until: until.toISOString(), max_in_flight: 4 });
      const listed = (await h.api('GET', '/v1/endpoints?limit=100')).json.data.find((e: { id: string }) => e.id === id);
      assert.deepEqual(listed.throttle, slowed.json.throttle, 'the list shows it too');

      // The pause is over, but the endpoint has not yet answered its way back to the usual cap.
      h.clock.advance(31_000);
      assert.deepEqual((await h.api('GET', `/v1/endpoints/${id}`)).json.throttle, { until: null, max_in_flight: 4 });

      // Recovered: the scheduler cleared the cap; an old end time alone is no slow-down.
      await h.db.query('UPDATE endpoints SET throttle_limit = NULL WHERE id = $1', [id]);
      assert.equal((await h.api('GET', `/v1/endpoints/${id}`)).json.throttle, null);
    });

    test('every endpoint says how long deliveries are kept: 30 and 90 days by default', async () => {
      const e = (await create()).json;
      assert.deepEqual(e.retention, { succeeded_days: 30, undelivered_days: 90 });
    });

    test('recovery reaches back as far as failed and skipped deliveries are kept, and refuses further back, saying how far', async () => {
      const id = (await create()).json.id;
      const now = h.clock.now().getTime();
      const edge = new Date(now - 90 * DAY).toISOString();
      const within = await h.api('POST', `/v1/endpoints/${id}/recover`, { since: edge, dry_run: true });
      assert.equal(within.status, 200);
      assert.equal(within.json.count, 0);

      const older = new Date(now - 90 * DAY - 1000).toISOString();
      for (const dry_run of [true, false]) {
        const refused = await h.api('POST', `/v1/endpoints/${id}/recover`, { since: older, dry_run });
        assert.equal(refused.status, 400);
        assert.equal(refused.headers['content-type'], 'application/problem+json; charset=utf-8');
        assert.equal(refused.json.code, 'beyond_retention');
        assert.deepEqual(refused.json.limit, { setting: 'HERALD_RETENTION_UNDELIVERED_DAYS', value: 90 });
        assert.equal(refused.json.errors[0].field, 'since');
        assert.match(refused.json.detail, /keeps failed and skipped deliveries for 90 days/);
        assert.ok(refused.json.detail.includes(`reaches back to ${edge}`), refused.json.detail);
      }

      // Another account's endpoint is the same 404 whatever the time.
      const other = await h.newAccount('Rival Inc');
      const foreign = await h.api('POST', `/v1/endpoints/${id}/recover`, { since: older, dry_run: true }, other.apiKey);
      assert.equal(foreign.status, 404);
    });
  });

  describe(`retention set by the operator [${engine}]`, () => {
    let h: TestHerald;
    before(async () => {
      h = await createTestHerald(engine, { retention: { succeededDays: 7, undeliveredDays: 14 } });
    });
    after(async () => {
      await h.close();
    });

    test('the endpoint shows the operator’s retention and recovery reaches back exactly that far', async () => {
      const e = (await h.api('POST', '/v1/endpoints', { url: 'https://hooks.example.com/herald', event_types: ['alarm.created'] })).json;
      assert.deepEqual(e.retention, { succeeded_days: 7, undelivered_days: 14 });
      const now = h.clock.now().getTime();
      const ok = await h.api('POST', `/v1/endpoints/${e.id}/recover`, { since: new Date(now - 14 * DAY).toISOString(), dry_run: true });
      assert.equal(ok.status, 200);
      const refused = await h.api('POST', `/v1/endpoints/${e.id}/recover`, { since: new Date(now - 15 * DAY).toISOString(), dry_run: true });
      assert.equal(refused.status, 400);
      assert.equal(refused.json.code, 'beyond_retention');
      assert.deepEqual(refused.json.limit, { setting: 'HERALD_RETENTION_UNDELIVERED_DAYS', value: 14 });
    });
  });
}
