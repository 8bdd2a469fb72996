import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { DEFAULT_LIMITS, loadConfig, type AccountLimits } from '../src/config.ts';
import { ConfigError } from '../src/errors.ts';
import { buildApp } from '../src/http/app.ts';
import { ENGINES } from './helpers/engines.ts';
import { createTestHerald, type TestHerald } from './helpers/herald.ts';
import { assertProblem } from './helpers/problem.ts';

const LIMITS: AccountLimits = { endpointsPerAccount: 3, batchDeliveries: 10, fanOutBytes: 64 * 1024, replayEvents: 100 };

describe('the limits are settings', () => {
  test('defaults, and each one read from its variable', () => {
    assert.deepEqual(loadConfig({ env: {} }).limits, DEFAULT_LIMITS);
    const limits = loadConfig({ env: { HERALD_MAX_ENDPOINTS_PER_ACCOUNT: '5000', HERALD_MAX_BATCH_DELIVERIES: '250000', HERALD_MAX_FANOUT_BYTES: '1073741824', HERALD_MAX_REPLAY_EVENTS: '500000' } }).limits;
    assert.deepEqual(limits, { endpointsPerAccount: 5000, batchDeliveries: 250_000, fanOutBytes: 1024 ** 3, replayEvents: 500_000 });
  });

  test('a bad value stops Herald with the name of the setting', () => {
    for (const [setting, value] of [['HERALD_MAX_ENDPOINTS_PER_ACCOUNT', '0'], ['HERALD_MAX_BATCH_DELIVERIES', 'many'], ['HERALD_MAX_FANOUT_BYTES', '-1'], ['HERALD_MAX_REPLAY_EVENTS', '0']] as const) {
      assert.throws(() => loadConfig({ env: { [setting]: value } }), (err: unknown) => err instanceof ConfigError && err.setting === setting);
    }
  });
});

for (const engine of ENGINES) {
  describe(`one account cannot make Herald hold or send without bound [${engine}]`, () => {
    let h: TestHerald;
    let app: FastifyInstance;
    before(async () => {
      h = await createTestHerald(engine);
      app = await buildApp({ ...h.deps, outbound: h.outbound, limits: LIMITS, disableAfter: 20, maxBodyBytes: 1024 * 1024, logLevel: 'silent' });
    });
    after(async () => {
      await app.close();
      await h.close();
    });

    const send = async (method: 'POST' | 'DELETE', url: string, body?: unknown, key = h.apiKey) => {
      const res = await app.inject({ method, url, headers: { authorization: `Bearer ${key}` }, ...(body === undefined ? {} : { payload: body as object }) });
      return { status: res.statusCode, json: res.body ? res.json() : undefined, headers: res.headers };
    };
    const endpoint = (i: number | string, types = ['shipment.created']) => ({ url: `https://e${i}.example.com/hook`, event_types: types });
    const count = async (table: 'endpoints' | 'events' | 'deliveries', accountId = h.accountId) =>
      (await h.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE account_id = $1`, [accountId])).rows[0]!.n;
    const assertLimit = (res: Awaited<ReturnType<typeof send>>, setting: string, value: number) => {
      assertProblem(res, 'limit_exceeded');
      assert.deepEqual(res.json.limit, { setting, value });
      assert.match(res.json.detail, new RegExp(`ask your operator to raise ${setting}`));
    };

    test('endpoints: the one past the limit is refused, naming the setting; deleting one makes room', async () => {
      const ids: string[] = [];
      for (let i = 0; i < LIMITS.endpointsPerAccount; i++) {
        const res = await send('POST', '/v1/endpoints', endpoint(i));
        assert.equal(res.status, 201, JSON.stringify(res.json));
        ids.push(res.json.id);
      }
      const refused = await send('POST', '/v1/endpoints', endpoint('x'));
      assertLimit(refused, 'HERALD_MAX_ENDPOINTS_PER_ACCOUNT', 3);
      assert.match(refused.json.detail, /has 3 endpoints/);
      assert.equal(await count('endpoints'), 3);
      // Another account has its own count.
      const other = await h.newAccount('Other');
      assert.equal((await send('POST', '/v1/endpoints', endpoint('o'), other.apiKey)).status, 201);
      assert.equal((await send('DELETE', `/v1/endpoints/${ids.pop()}`)).status, 204);
      assert.equal((await send('POST', '/v1/endpoints', endpoint('again'))).status, 201);
    });

    test('endpoints created at the same time cannot pass the limit together', async () => {
      const { accountId, apiKey } = await h.newAccount('Racing');
      const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => send('POST', '/v1/endpoints', endpoint(`r${i}`), apiKey)));
      assert.equal(answers.filter((a) => a.status === 201).length, 3);
      assert.equal(answers.filter((a) => a.status === 422).length, 5);
      assert.equal(await count('endpoints', accountId), 3);
    });

    test('a batch that would create more deliveries than allowed is refused whole', async () => {
      // Three endpoints subscribe to shipment.created (the first test left them).
      const events = (n: number) => ({ events: Array.from({ length: n }, (_, i) => ({ type: 'shipment.created', data: { id: i } })) });
      const before = { events: await count('events'), deliveries: await count('deliveries') };
      const refused = await send('POST', '/v1/events/batch', events(4));
      assertLimit(refused, 'HERALD_MAX_BATCH_DELIVERIES', 10);
      assert.match(refused.json.detail, /would create 12 deliveries/);
      assert.deepEqual({ events: await count('events'), deliveries: await count('deliveries') }, before);
      const accepted = await send('POST', '/v1/events/batch', events(3));
      assert.equal(accepted.status, 202, JSON.stringify(accepted.json));
      assert.equal(await count('deliveries'), before.deliveries + 9);
      // Events of a type no endpoint subscribes to create no deliveries, and count for nothing.
      const quiet = { events: Array.from({ length: 20 }, (_, i) => ({ type: 'shipment.completed', data: { id: i } })) };
      assert.equal((await send('POST', '/v1/events/batch', quiet)).status, 202);
    });

    test('an event whose body times its endpoints is over the byte limit is refused, single or in a batch', async () => {
      const sized = (bytes: number) => ({ type: 'shipment.created', data: { id: 1, notes: 'x'.repeat(bytes) } });
      const before = await count('events');
      // 30 KiB to 3 endpoints: 90 KiB, over 64 KiB.
      const refused = await send('POST', '/v1/events', sized(30 * 1024));
      assertLimit(refused, 'HERALD_MAX_FANOUT_BYTES', 64 * 1024);
      assert.match(refused.json.detail, /would send 0\.1 MiB/);
      assertLimit(await send('POST', '/v1/events/batch', { events: [sized(12 * 1024), sized(12 * 1024)] }), 'HERALD_MAX_FANOUT_BYTES', 64 * 1024);
      assert.equal(await count('events'), before);
      assert.equal((await send('POST', '/v1/events', sized(16 * 1024))).status, 202);
      // The same body to an account without subscribers goes nowhere: nothing to refuse.
      const lonely = await h.newAccount('Lonely');
      assert.equal((await send('POST', '/v1/events', sized(300 * 1024), lonely.apiKey)).status, 202);
    });
  });
}
