import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { generateApiKey } from '../src/core/secrets.ts';
import { ENGINES } from './helpers/engines.ts';
import { createTestHerald, type TestHerald } from './helpers/herald.ts';
import { assertProblem } from './helpers/problem.ts';

const LIMIT = 5;

for (const engine of ENGINES) {
  describe(`failed authentications are limited per address [${engine}]`, () => {
    let h: TestHerald;
    let queries = 0;
    before(async () => {
      h = await createTestHerald(engine, { rateLimits: { unauthenticatedPerMinute: LIMIT } });
      // Count every statement the API runs (the app holds this very object).
      const query = h.db.query.bind(h.db);
      h.db.query = ((...args: Parameters<typeof query>) => {
        queries += 1;
        return query(...args);
      }) as typeof query;
    });
    after(() => h.close());

    const get = (key: string | undefined, remoteAddress: string) =>
      h.call('GET', '/v1/endpoints', { headers: key ? { authorization: `Bearer ${key}` } : {}, remoteAddress });

    test(`the ${LIMIT + 1}th failure from an address is 429 with Retry-After, before any database query`, async () => {
      const address = '198.51.100.7';
      const known = await get(h.apiKey, address);
      assert.equal(known.status, 200, 'a valid key, accepted before the failures');

      const start = queries;
      for (let i = 0; i < LIMIT; i++) {
        const res = await get(generateApiKey().key, address);
        assert.equal(res.status, 401);
      }
      assert.ok(queries - start >= LIMIT, 'each unknown key costs a lookup');
      const before = queries;
      const limited = await get(generateApiKey().key, address);
      assertProblem(limited, 'rate_limited');
      assert.equal(queries, before, 'refused without a database query');
      assert.equal(limited.headers['retry-after'], '60');
      assert.match(limited.json.detail, /HERALD_UNAUTHENTICATED_RATE_LIMIT/);

      // No key at all counts the same way.
      assertProblem(await get(undefined, address), 'rate_limited');

      // The key this process has accepted still works from the limited address (a shared NAT).
      assert.equal((await get(h.apiKey, address)).status, 200);
      // Another address is not affected.
      assert.equal((await get(generateApiKey().key, '198.51.100.8')).status, 401);
      // A key never seen here waits for the window, like any unproven credential.
      const other = await h.newAccount('Globex');
      assertProblem(await get(other.apiKey, address), 'rate_limited');

      h.clock.advance(60_000);
      assert.equal((await get(generateApiKey().key, address)).status, 401, 'a new window, a new budget');
      assert.equal((await get(other.apiKey, address)).status, 200);
    });

    test('valid requests never count towards the limit', async () => {
      const address = '198.51.100.9';
      for (let i = 0; i < LIMIT * 3; i++) assert.equal((await get(h.apiKey, address)).status, 200);
      assert.equal((await get(generateApiKey().key, address)).status, 401);
    });
  });
}

describe('HERALD_UNAUTHENTICATED_RATE_LIMIT=0 turns the limit off', () => {
  let h: TestHerald;
  before(async () => {
    h = await createTestHerald(ENGINES[0]!, { rateLimits: { unauthenticatedPerMinute: 0 } });
  });
  after(() => h.close());

  test('any number of failures are 401', async () => {
    for (let i = 0; i < 100; i++) {
      const res = await h.call('GET', '/v1/endpoints', { headers: { authorization: `Bearer ${generateApiKey().key}` } });
      assert.equal(res.status, 401);
    }
  });
});
