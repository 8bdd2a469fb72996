import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ENGINES } from './helpers/engines.ts';
import { alarmData, createTestHerald, type TestHerald } from './helpers/herald.ts';

for (const engine of ENGINES) {
  describe(`API keys through the API [${engine}]`, () => {
    let h: TestHerald;
    before(async () => {
      h = await createTestHerald(engine);
    });
    after(async () => {
      await h.close();
    });

    test('create shows the key once; list shows prefixes only; the new key works; revoke makes it 401 at once', async () => {
      const created = await h.api('POST', '/v1/api-keys', { name: 'billing service' });
      assert.equal(created.status, 201);
      assert.equal(created.headers['cache-control'], 'no-store');
      assert.match(created.json.key, /^hk_/);
      assert.ok(created.json.key.startsWith(created.json.prefix));
      assert.equal(created.json.name, 'billing service');

      const list = await h.api('GET', '/v1/api-keys');
      assert.equal(list.json.data.length, 2);
      const text = JSON.stringify(list.json);
      assert.ok(!text.includes(created.json.key) && !text.includes(h.apiKey), 'no key in clear');
      assert.ok(list.json.data.every((k: Record<string, unknown>) => !('secret_hash' in k) && !('key' in k)));

      assert.equal((await h.api('GET', '/v1/endpoints', undefined, created.json.key)).status, 200);
      const revoked = await h.api('DELETE', `/v1/api-keys/${created.json.id}`);
      assert.equal(revoked.status, 200);
      assert.ok(revoked.json.revoked_at);
      for (const [method, url, body] of [
        ['GET', '/v1/endpoints', undefined],
        ['GET', '/v1/api-keys', undefined],
        ['POST', '/v1/events', { type: 'alarm.created', data: alarmData() }],
        ['GET', '/v1/event-types', undefined],
      ] as const) {
        const res = await h.api(method, url, body, created.json.key);
        assert.equal(res.status, 401, url);
        assert.equal(res.json.code, 'unauthorized');
      }
      assert.equal((await h.api('GET', '/v1/endpoints')).status, 200, 'the other key still works');
    });

    test("another account's key id is the same 404 as none, and stays valid", async () => {
      const other = await h.newAccount('Rival Inc');
      const theirs = (await h.api('GET', '/v1/api-keys', undefined, other.apiKey)).json.data[0];
      const res = await h.api('DELETE', `/v1/api-keys/${theirs.id}`);
      assert.equal(res.status, 404);
      assert.equal((await h.api('GET', '/v1/endpoints', undefined, other.apiKey)).status, 200);
      assert.ok(!(await h.api('GET', '/v1/api-keys')).json.data.some((k: { id: string }) => k.id === theirs.id));
    });

    test('the list pages with a cursor; a cursor naming another account\'s key, or none, is a 400', async () => {
      const { apiKey } = await h.newAccount('Many Keys Ltd');
      const made = [];
      for (const name of ['one', 'two', 'three']) made.push((await h.api('POST', '/v1/api-keys', { name }, apiKey)).json.id);
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const res = await h.api('GET', `/v1/api-keys?limit=1${cursor ? `&cursor=${cursor}` : ''}`, undefined, apiKey);
        assert.equal(res.status, 200);
        assert.ok(res.json.data.every((k: Record<string, unknown>) => !('position' in k)));
        seen.push(...res.json.data.map((k: { id: string }) => k.id));
        cursor = res.json.next_cursor;
      } while (cursor);
      assert.equal(seen.length, 4, 'the first key and the three made');
      assert.deepEqual(seen.slice(1), made);

      const mine = (await h.api('GET', '/v1/api-keys')).json.data[0].id;
      for (const bad of [mine, 'f'.repeat(36), 'junk']) {
        const res = await h.api('GET', `/v1/api-keys?cursor=${bad}`, undefined, apiKey);
        assert.equal(res.status, 400, bad);
        assert.equal(res.json.errors[0].field, 'query.cursor');
      }
    });

    test('a name is checked', async () => {
      const res = await h.api('POST', '/v1/api-keys', { name: '' });
      assert.equal(res.status, 400);
      assert.equal(res.json.errors[0].field, 'name');
      assert.equal((await h.api('POST', '/v1/api-keys')).status, 201, 'no body: a key named "default"');
    });
  });

  describe(`Idempotency-Key [${engine}]`, () => {
    let h: TestHerald;
    before(async () => {
      h = await createTestHerald(engine);
    });
    after(async () => {
      await h.close();
    });
    const withKey = (key: string) => ({ 'idempotency-key': key });
    const body = { url: 'https://example.com/hook', event_types: ['alarm.created'] };

    test('a retried create replays the first response, secret included, and creates nothing new', async () => {
      const first = await h.api('POST', '/v1/endpoints', body, undefined, withKey('create-1'));
      assert.equal(first.status, 201);
      assert.equal(first.headers['idempotent-replayed'], undefined);
      const again = await h.api('POST', '/v1/endpoints', body, undefined, withKey('create-1'));
      assert.equal(again.status, 201);
      assert.equal(again.headers['idempotent-replayed'], 'true');
      assert.equal(again.headers['cache-control'], 'no-store');
      assert.deepEqual(again.json, first.json);
      assert.equal((await h.api('GET', '/v1/endpoints')).json.data.length, 1);

      const stored = await h.db.query<{ response_encrypted: Buffer }>('SELECT response_encrypted FROM idempotency_keys');
      assert.ok(!stored.rows[0]!.response_encrypted.toString('latin1').includes(first.json.secret), 'the stored response is encrypted');
    });

    test('the same key on another request is a 422; on another account it is independent', async () => {
      const other = await h.api('POST', '/v1/endpoints', { ...body, url: 'https://example.com/other' }, undefined, withKey('create-1'));
      assert.equal(other.status, 422);
      assert.equal(other.json.code, 'idempotency_key_reused');
      const rival = await h.newAccount('Rival Inc');
      const theirs = await h.api('POST', '/v1/endpoints', body, rival.apiKey, withKey('create-1'));
      assert.equal(theirs.status, 201);
      assert.equal(theirs.headers['idempotent-replayed'], undefined);
    });

    test('errors are replayed too, a bad key is named, and GET ignores the header', async () => {
      const bad = await h.api('POST', '/v1/endpoints/00000000-0000-4000-8000-000000000000/enable', undefined, undefined, withKey('enable-1'));
      assert.equal(bad.status, 404);
      const replay = await h.api('POST', '/v1/endpoints/00000000-0000-4000-8000-000000000000/enable', undefined, undefined, withKey('enable-1'));
      assert.equal(replay.status, 404);
      assert.equal(replay.headers['idempotent-replayed'], 'true');
      assert.deepEqual(replay.json, bad.json);

      const invalid = await h.api('POST', '/v1/endpoints', body, undefined, withKey('x'.repeat(256)));
      assert.equal(invalid.status, 400);
      assert.equal(invalid.json.errors[0].field, 'headers.idempotency-key');
      const get = await h.api('GET', '/v1/endpoints', undefined, undefined, withKey('create-1'));
      assert.equal(get.status, 200);
    });

    test('a publish retried with a key is replayed; a DELETE replay answers 204 again', async () => {
      const ev = { type: 'alarm.created', data: alarmData() };
      const first = await h.api('POST', '/v1/events', ev, undefined, withKey('publish-1'));
      const again = await h.api('POST', '/v1/events', ev, undefined, withKey('publish-1'));
      assert.equal(again.status, 202);
      assert.equal(again.json.id, first.json.id);
      assert.equal((await h.api('GET', '/v1/events')).json.data.length, 1);

      const created = (await h.api('POST', '/v1/endpoints', { ...body, url: 'https://example.com/gone' })).json;
      const del = await h.api('DELETE', `/v1/endpoints/${created.id}`, undefined, undefined, withKey('delete-1'));
      assert.equal(del.status, 204);
      const delAgain = await h.api('DELETE', `/v1/endpoints/${created.id}`, undefined, undefined, withKey('delete-1'));
      assert.equal(delAgain.status, 204);
      assert.equal(delAgain.headers['idempotent-replayed'], 'true');
    });

    test('a key whose request is still running is a 409', async () => {
      await h.db.query('INSERT INTO idempotency_keys (account_id, key, request_hash, created_at) VALUES ($1, $2, $3, $4)', [
        h.accountId,
        'running-1',
        Buffer.alloc(32),
        h.clock.now(),
      ]);
      const res = await h.api('POST', '/v1/endpoints', body, undefined, withKey('running-1'));
      assert.equal(res.status, 422, 'a different request hash is a reuse, whatever its state');
      const hash = await h.db.query<{ request_hash: Buffer }>("SELECT request_hash FROM idempotency_keys WHERE key = 'create-1' AND account_id = $1", [h.accountId]);
      await h.db.query("UPDATE idempotency_keys SET status_code = NULL, response_encrypted = NULL, request_hash = $2 WHERE key = 'running-1' AND account_id = $1", [
        h.accountId,
        hash.rows[0]!.request_hash,
      ]);
      const busy = await h.api('POST', '/v1/endpoints', body, undefined, withKey('running-1'));
      assert.equal(busy.status, 409);
      assert.equal(busy.json.code, 'idempotency_key_in_use');
      // A minute later its process is presumed dead: the key is taken over and the request runs.
      h.clock.advance(61_000);
      const taken = await h.api('POST', '/v1/endpoints', body, undefined, withKey('running-1'));
      assert.equal(taken.status, 201);
    });
  });

  describe(`rate limits [${engine}]`, () => {
    let h: TestHerald;
    before(async () => {
      h = await createTestHerald(engine, { rateLimits: { managementPerMinute: 3, ingestPerMinute: 5 } });
    });
    after(async () => {
      await h.close();
    });

    test('each key has its limit, with RateLimit headers; the next request is a 429 problem with Retry-After', async () => {
      for (let i = 0; i < 3; i++) {
        const res = await h.api('GET', '/v1/endpoints');
        assert.equal(res.status, 200);
        assert.equal(res.headers['ratelimit-limit'], '3');
        assert.equal(res.headers['ratelimit-remaining'], String(2 - i));
        assert.ok(Number(res.headers['ratelimit-reset']) > 0);
      }
      const limited = await h.api('GET', '/v1/endpoints');
      assert.equal(limited.status, 429);
      assert.equal(limited.json.code, 'rate_limited');
      assert.match(limited.json.detail, /HERALD_RATE_LIMIT/);
      assert.ok(Number(limited.headers['retry-after']) > 0);
      assert.match(String(limited.headers['content-type']), /application\/problem\+json/);

      // Publishing has its own budget, and another key its own.
      const published = await h.api('POST', '/v1/events', { type: 'alarm.created', data: alarmData() });
      assert.equal(published.status, 202);
      assert.equal(published.headers['ratelimit-limit'], '5');
      const created = await h.newAccount('Second');
      assert.equal((await h.api('GET', '/v1/endpoints', undefined, created.apiKey)).status, 200);
    });

    test('a request without a valid key is refused before it counts', async () => {
      const res = await h.api('GET', '/v1/endpoints', undefined, 'hk_nope');
      assert.equal(res.status, 401);
    });
  });
}
