import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { generateApiKey } from '../src/core/secrets.ts';
import { createUser } from '../src/services/users.ts';
import { ENGINES } from './helpers/engines.ts';
import { createTestHerald, type TestHerald } from './helpers/herald.ts';
import { assertProblem } from './helpers/problem.ts';

const LIMIT = 5;
const PROXY = '10.0.0.1';

for (const engine of ENGINES) {
  describe(`failed authentications are limited per client [${engine}]`, () => {
    let h: TestHerald;
    let queries = 0;
    before(async () => {
      h = await createTestHerald(engine, { rateLimits: { unauthenticatedPerMinute: LIMIT }, trustedProxies: [PROXY] });
      await createUser(h.db, h.deps.passwords, h.accountId, { email: 'ada@acme.example', name: 'Ada', password: 'correct horse battery staple' });
      // Count every statement the API runs (the app holds this very object).
      const query = h.db.query.bind(h.db);
      h.db.query = ((...args: Parameters<typeof query>) => {
        queries += 1;
        return query(...args);
      }) as typeof query;
    });
    // Each test starts a fresh window.
    beforeEach(() => h.clock.advance(60_000));
    after(() => h.close());

    const get = (key: string | undefined, remoteAddress: string, headers: Record<string, string> = {}) =>
      h.call('GET', '/v1/endpoints', { headers: { ...headers, ...(key ? { authorization: `Bearer ${key}` } : {}) }, remoteAddress });

    /** Uses up `address`'s budget with requests that carry no credential (they cost no query). */
    async function limit(address: string): Promise<void> {
      for (let i = 0; i < LIMIT; i++) assert.equal((await get(undefined, address)).status, 401);
      assertProblem(await get(undefined, address), 'rate_limited');
    }

    test(`past ${LIMIT} failures, a request without a credential, or with one that just failed, is 429 with Retry-After before any query`, async () => {
      const address = '198.51.100.7';
      const bad = generateApiKey().key;
      const start = queries;
      for (let i = 0; i < LIMIT; i++) assert.equal((await get(i === 0 ? bad : undefined, address)).status, 401);
      assert.equal(queries - start, 1, 'only the well-formed key cost a lookup');

      const before = queries;
      const limited = await get(undefined, address);
      assertProblem(limited, 'rate_limited');
      assert.equal(limited.headers['retry-after'], '60');
      assert.match(limited.json.detail, /HERALD_UNAUTHENTICATED_RATE_LIMIT/);
      assertProblem(await get('not-a-key', address), 'rate_limited');
      assertProblem(await get(bad, address), 'rate_limited');
      assertProblem(await get(undefined, address, { cookie: 'herald_session=junk' }), 'rate_limited');
      assert.equal(queries, before, 'refused without a database query');

      // Another address is not affected; a failed key repeated there fails without a lookup too.
      assert.equal((await get(bad, '198.51.100.8')).status, 401);
      assert.equal(queries, before);

      h.clock.advance(60_000);
      assert.equal((await get(undefined, address)).status, 401, 'a new window, a new budget');
    });

    test('bad keys sent all at once: at most the limit reach the lookup', async () => {
      const address = '198.51.100.20';
      const bad = generateApiKey().key;
      const start = queries;
      const statuses = (await Promise.all(Array.from({ length: 200 }, () => get(bad, address)))).map((r) => r.status);
      assert.ok(queries - start <= LIMIT, `${queries - start} lookups`);
      assert.ok(statuses.every((s) => s === 401 || s === 429), `statuses: ${[...new Set(statuses)].join(', ')}`);
      assert.ok(statuses.filter((s) => s === 401).length <= LIMIT);

      const keyless = (await Promise.all(Array.from({ length: 200 }, () => get(undefined, '198.51.100.21')))).map((r) => r.status);
      assert.equal(keyless.filter((s) => s === 401).length, LIMIT, 'no more failures than the limit are let through');
    });

    test('a limited address does not lock out valid credentials it shares the address with (a NAT, a proxy)', async () => {
      const address = '198.51.100.9';
      await limit(address);
      const before = queries;
      // A key this process has never seen is looked up, and works.
      const other = await h.newAccount('Globex');
      assert.equal((await get(other.apiKey, address)).status, 200);
      assert.ok(queries > before, 'it was looked up');
      // Many requests at once with a key not seen before all work.
      const third = await h.newAccount('Initech');
      const burst = await Promise.all(Array.from({ length: 20 }, () => get(third.apiKey, address)));
      assert.deepEqual([...new Set(burst.map((r) => r.status))], [200]);
      // A panel session that began elsewhere works from here too.
      const signIn = await h.call('POST', '/v1/session', { body: { email: 'ada@acme.example', password: 'correct horse battery staple' }, remoteAddress: '192.0.2.1' });
      assert.equal(signIn.status, 200);
      const cookie = signIn.cookies.find((c) => c.name.endsWith('herald_session'))!;
      assert.equal((await get(undefined, address, { cookie: `${cookie.name}=${cookie.value}` })).status, 200);

      // A well-formed key not seen before costs one lookup, then fails without one.
      const unknown = generateApiKey().key;
      assertProblem(await get(unknown, address), 'unauthorized');
      const after = queries;
      assertProblem(await get(unknown, address), 'rate_limited');
      assert.equal(queries, after);
    });

    test('valid requests never count towards the limit', async () => {
      const address = '198.51.100.10';
      for (let i = 0; i < LIMIT * 3; i++) assert.equal((await get(h.apiKey, address)).status, 200);
      assert.equal((await get(undefined, address)).status, 401);
    });

    test('an IPv6 host is its /64: rotating addresses in it does not reset the count', async () => {
      const statuses: number[] = [];
      for (let i = 1; i <= 100; i++) statuses.push((await get(undefined, `2001:db8:1:2::${i.toString(16)}`)).status);
      assert.equal(statuses.filter((s) => s === 401).length, LIMIT);
      assert.equal(statuses.filter((s) => s === 429).length, 100 - LIMIT);
      assert.equal((await get(undefined, '2001:db8:1:3::1')).status, 401, 'another /64 is another client');
    });

    test('behind a trusted proxy, a port or another spelling of the client address is the same client', async () => {
      const via = (forwarded: string) => get(undefined, PROXY, { 'x-forwarded-for': forwarded });
      const spellings = ['203.0.113.5:1001', '203.0.113.5:1002', '203.0.113.5', '::ffff:203.0.113.5', '[::ffff:203.0.113.5]:443'];
      for (const forwarded of spellings) assert.equal((await via(forwarded)).status, 401, forwarded);
      assertProblem(await via('203.0.113.5:1003'), 'rate_limited');
      assert.equal((await via('203.0.113.6:1001')).status, 401, 'another client behind the proxy');
      // Text that is not an address shares one bucket, however it is spelled.
      for (let i = 0; i < LIMIT; i++) assert.equal((await via(`garbage-${i}`)).status, 401);
      assertProblem(await via('more-garbage'), 'rate_limited');
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
