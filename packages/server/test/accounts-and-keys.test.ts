import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { HeraldError } from '../src/errors.ts';
import { KEY_CACHE_MS } from '../src/services/api-key-cache.ts';
import { authenticate, createAccount, createApiKey } from '../src/services/accounts.ts';
import { OPERATOR_OPS } from '../src/services/operator.ts';
import { ENGINES } from './helpers/engines.ts';
import { createTestHerald, type TestHerald } from './helpers/herald.ts';

const rejectsWith = (code: string) => (err: unknown) => err instanceof HeraldError && err.code === code;

for (const engine of ENGINES) {
  describe(`accounts and API keys [${engine}]`, () => {
    let h: TestHerald;
    before(async () => {
      h = await createTestHerald(engine);
    });
    after(async () => {
      await h.close();
    });

    test('an account needs a name; names are trimmed', async () => {
      for (const name of [undefined, '', '   ', 42, 'x'.repeat(201)]) {
        await assert.rejects(createAccount(h.db, name), rejectsWith('validation_failed'), String(name));
      }
      const account = await createAccount(h.db, '  Acme Logistics  ');
      assert.equal(account.name, 'Acme Logistics');
      assert.ok(account.created_at instanceof Date);
    });

    test('operator commands create and list accounts', async () => {
      const a = (await OPERATOR_OPS['accounts.create'](h.deps, { name: 'Northwind' })) as { id: string; name: string; created_at: string };
      assert.equal(a.name, 'Northwind');
      assert.match(a.created_at, /Z$/);
      const { data: list, next_cursor } = (await OPERATOR_OPS['accounts.list'](h.deps)) as { data: Array<{ id: string }>; next_cursor: null };
      assert.equal(next_cursor, null);
      assert.ok(list.some((x) => x.id === a.id));
      assert.ok(list.some((x) => x.id === h.accountId));
    });

    test('a key is created for an existing account only, and is printed once: list shows the prefix, never the key', async () => {
      await assert.rejects(createApiKey(h.db, '00000000-0000-4000-8000-000000000000'), (err: unknown) => err instanceof HeraldError && err.code === 'not_found' && /herald accounts list/.test(err.message));
      await assert.rejects(createApiKey(h.db, 'not-an-id'), rejectsWith('not_found'));

      const account = await createAccount(h.db, 'Keys Co');
      const created = (await OPERATOR_OPS['keys.create'](h.deps, { account: account.id, name: 'ci' })) as Record<string, unknown>;
      assert.match(String(created.key), /^hk_[A-Za-z0-9]{8}_[A-Za-z0-9_-]{32}$/);
      assert.equal(created.account_id, account.id);
      assert.equal(created.name, 'ci');
      assert.equal(created.revoked_at, null);
      assert.ok(String(created.key).startsWith(`${created.prefix}_`));

      const listed = ((await OPERATOR_OPS['keys.list'](h.deps, { account: account.id })) as { data: Array<Record<string, unknown>> }).data;
      assert.equal(listed.length, 1);
      assert.deepEqual(Object.keys(listed[0]!).sort(), ['account_id', 'created_at', 'id', 'name', 'prefix', 'revoked_at']);
      assert.equal(listed[0]!.prefix, created.prefix);
      assert.ok(!JSON.stringify(listed).includes(String(created.key)));

      const stored = await h.db.query<Record<string, unknown>>('SELECT * FROM api_keys WHERE account_id = $1', [account.id]);
      assert.ok(!JSON.stringify(stored.rows).includes(String(created.key).slice(12)), 'only a hash is stored');
    });

    test('a key authenticates its own account', async () => {
      const res = await h.api('GET', '/v1/endpoints');
      assert.equal(res.status, 200);
      const auth = await authenticate(h.deps, `Bearer ${h.apiKey}`);
      assert.equal(auth.accountId, h.accountId);
      assert.equal((await authenticate(h.deps, `bearer   ${h.apiKey}`)).accountId, h.accountId, 'scheme is case-insensitive');
    });

    test('a key revoked by another process (straight in the database) stops working within the cache time', async () => {
      const { key, row } = await createApiKey(h.db, h.accountId, 'elsewhere');
      const t = 1_000_000;
      assert.equal((await authenticate(h.deps, `Bearer ${key}`, t)).keyId, row.id);
      await h.db.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [row.id]);
      assert.equal((await authenticate(h.deps, `Bearer ${key}`, t + KEY_CACHE_MS - 1)).keyId, row.id, 'still cached');
      await assert.rejects(authenticate(h.deps, `Bearer ${key}`, t + KEY_CACHE_MS + 1), { code: 'unauthorized' });
      // A cached key still has to match: the prefix alone is not enough.
      const { key: live } = await createApiKey(h.db, h.accountId, 'live');
      await authenticate(h.deps, `Bearer ${live}`, t);
      await assert.rejects(authenticate(h.deps, `Bearer ${live.slice(0, -1)}${live.endsWith('A') ? 'B' : 'A'}`, t), { code: 'unauthorized' });
    });

    test('missing, malformed, unknown and altered keys all get the same 401', async () => {
      const altered = `${h.apiKey.slice(0, -1)}${h.apiKey.endsWith('A') ? 'B' : 'A'}`;
      const unknown = `hk_zzzzzzzz_${'a'.repeat(32)}`;
      const cases: Array<[string, Record<string, string>]> = [
        ['no header', {}],
        ['empty', { authorization: '' }],
        ['basic scheme', { authorization: `Basic ${Buffer.from(`${h.apiKey}:`).toString('base64')}` }],
        ['not a key', { authorization: 'Bearer letmein' }],
        ['unknown prefix', { authorization: `Bearer ${unknown}` }],
        ['right prefix, wrong secret', { authorization: `Bearer ${altered}` }],
      ];
      const details = new Set<string>();
      for (const [what, headers] of cases) {
        const res = await h.app.inject({ method: 'GET', url: '/v1/endpoints', headers });
        assert.equal(res.statusCode, 401, what);
        assert.match(String(res.headers['content-type']), /^application\/problem\+json/, what);
        const body = res.json();
        assert.equal(body.code, 'unauthorized', what);
        details.add(body.detail);
      }
      assert.equal(details.size, 1, 'nothing tells which part was wrong');
    });

    test('a revoked key gets 401 at once; other keys of the account keep working', async () => {
      const { key: doomed, row } = await createApiKey(h.db, h.accountId, 'doomed');
      const { key: kept } = await createApiKey(h.db, h.accountId, 'kept');
      assert.equal((await h.api('GET', '/v1/endpoints', undefined, doomed)).status, 200);

      const revoked = (await OPERATOR_OPS['keys.revoke'](h.deps, { key: row.prefix })) as { revoked_at: string | null };
      assert.ok(revoked.revoked_at);

      for (const [method, url, body] of [
        ['GET', '/v1/endpoints'],
        ['POST', '/v1/endpoints', { url: 'https://x.example.com/', event_types: ['alarm.created'] }],
        ['POST', '/v1/events', { type: 'shipment.created', data: { id: 1 } }],
      ] as const) {
        const res = await h.api(method, url, body, doomed);
        assert.equal(res.status, 401, `${method} ${url}`);
        assert.equal(res.json.code, 'unauthorized');
      }
      assert.equal((await h.db.query('SELECT 1 FROM endpoints WHERE url = $1', ['https://x.example.com/'])).rowCount, 0);
      assert.equal((await h.api('GET', '/v1/endpoints', undefined, kept)).status, 200);
    });

    test('revoke by id works too, is idempotent, and an unknown key is not_found', async () => {
      const { key, row } = await createApiKey(h.db, h.accountId, 'by-id');
      const first = (await OPERATOR_OPS['keys.revoke'](h.deps, { key: row.id })) as { revoked_at: string };
      const second = (await OPERATOR_OPS['keys.revoke'](h.deps, { key: row.id })) as { revoked_at: string };
      assert.equal(second.revoked_at, first.revoked_at, 'the first revocation time is kept');
      assert.equal((await h.api('GET', '/v1/endpoints', undefined, key)).status, 401);
      await assert.rejects(OPERATOR_OPS['keys.revoke'](h.deps, { key: 'hk_nothere' }), rejectsWith('not_found'));
    });
  });
}
