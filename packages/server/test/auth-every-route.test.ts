import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openApiDocument } from '../src/http/openapi.ts';
import { ENGINES } from './helpers/engines.ts';
import { alarmData, createTestHerald, type TestHerald } from './helpers/herald.ts';

type Doc = { paths: Record<string, Record<string, { security?: unknown[]; requestBody?: unknown }>> };

/**
 * Every /v1 operation of the OpenAPI document under its default security (an
 * API key or a panel session), so a new route cannot be left out of these
 * checks. The sign-in and setup routes declare their own and are tested in
 * panel-auth.test.ts.
 */
async function operations(): Promise<Array<{ method: string; path: string }>> {
  const doc = (await openApiDocument()) as Doc;
  return Object.entries(doc.paths)
    .filter(([path]) => path.startsWith('/v1/'))
    .flatMap(([path, ops]) => Object.entries(ops).filter(([, op]) => !op.security).map(([method]) => ({ method: method.toUpperCase(), path })));
}

/** A plausible body for each mutating operation, so that only authorisation can refuse it. */
function bodyFor(method: string, path: string, ids: Record<string, string>): unknown {
  if (method === 'GET' || method === 'DELETE') return undefined;
  if (path === '/v1/endpoints') return { url: 'https://example.com/x', event_types: ['alarm.created'] };
  if (path === '/v1/events') return { type: 'alarm.created', data: alarmData() };
  if (path === '/v1/events/batch') return { events: [{ type: 'alarm.created', data: alarmData() }] };
  if (path.endsWith('/recover')) return { since: '2026-11-01T00:00:00Z', dry_run: true };
  if (path.endsWith('/redeliver')) return { endpoint_id: ids.endpoint };
  return {};
}

for (const engine of ENGINES) {
  describe(`authorisation on every route of the OpenAPI document [${engine}]`, () => {
    let h: TestHerald;
    let ids: Record<string, string>;
    let ops: Array<{ method: string; path: string }>;

    before(async () => {
      h = await createTestHerald(engine);
      ops = await operations();
      const endpoint = (await h.api('POST', '/v1/endpoints', { url: 'https://127.0.0.1:9/x', event_types: ['alarm.created'] })).json;
      const attempt = (await h.api('POST', `/v1/endpoints/${endpoint.id}/test`)).json;
      const event = (await h.api('POST', '/v1/events', { type: 'alarm.created', data: alarmData() })).json;
      const key = (await h.api('POST', '/v1/api-keys', { name: 'spare' })).json;
      const replay = (await h.api('POST', '/v1/replays', { event_ids: [event.id] })).json;
      ids = { endpoint: endpoint.id, attempt: attempt.id, event: event.id, key: key.id, replay: replay.id };
    });
    after(async () => {
      await h.close();
    });

    const fill = (path: string) =>
      path
        .replace('/v1/endpoints/{id}', `/v1/endpoints/${ids.endpoint}`)
        .replace('{attempt_id}', ids.attempt!)
        .replace('/v1/events/{id}', `/v1/events/${ids.event}`)
        .replace('/v1/api-keys/{id}', `/v1/api-keys/${ids.key}`)
        .replace('/v1/replays/{id}', `/v1/replays/${ids.replay}`)
        .replace('{name}', 'alarm.created');

    test('without a key, with a malformed, unknown or revoked key: 401 on every operation, and nothing changes', async () => {
      const revoked = (await h.api('POST', '/v1/api-keys', { name: 'to revoke' })).json;
      await h.api('DELETE', `/v1/api-keys/${revoked.id}`);
      const before = await h.db.query<{ n: number }>('SELECT (SELECT count(*) FROM endpoints) + (SELECT count(*) FROM events) + (SELECT count(*) FROM api_keys WHERE revoked_at IS NULL) AS n');
      assert.ok(ops.length >= 18);
      for (const { method, path } of ops) {
        for (const key of ['', 'hk_nonsense', 'hk_AAAAAAAA_BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB', revoked.key]) {
          const res = await h.app.inject({
            method: method as 'GET',
            url: fill(path),
            headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), 'content-type': 'application/json' },
            payload: JSON.stringify(bodyFor(method, path, ids) ?? {}),
          });
          assert.equal(res.statusCode, 401, `${method} ${path} with ${key ? 'a bad key' : 'no key'}`);
          assert.equal(res.json().code, 'unauthorized');
        }
      }
      const after_ = await h.db.query<{ n: number }>('SELECT (SELECT count(*) FROM endpoints) + (SELECT count(*) FROM events) + (SELECT count(*) FROM api_keys WHERE revoked_at IS NULL) AS n');
      assert.deepEqual(after_.rows, before.rows);
    });

    test("another account's key gets the same 404 as for no such object on every operation on an object", async () => {
      const other = await h.newAccount('Rival Inc');
      const onObjects = ops.filter(({ path }) => path.includes('{id}'));
      assert.ok(onObjects.length >= 12);
      for (const { method, path } of onObjects) {
        const res = await h.api(method, fill(path), bodyFor(method, path, { endpoint: ids.endpoint! }), other.apiKey);
        assert.equal(res.status, 404, `${method} ${path}`);
        assert.equal(res.json.code, 'not_found');
      }
      // Everything is still there for its owner.
      assert.equal((await h.api('GET', `/v1/endpoints/${ids.endpoint}`)).status, 200);
      assert.equal((await h.api('GET', `/v1/events/${ids.event}`)).status, 200);
      assert.equal((await h.api('GET', '/v1/api-keys')).json.data.find((k: { id: string }) => k.id === ids.key).revoked_at, null);
    });
  });
}
