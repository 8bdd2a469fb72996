import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ENGINES } from './helpers/engines.ts';
import { createTestHerald, type TestHerald } from './helpers/herald.ts';

const ENDPOINT_FIELDS = [
  'id',
  'url',
  'description',
  'event_types',
  'state',
  'disabled_reason',
  'disabled_at',
  'disabled_by',
  'failure_streak',
  'failure_threshold',
  'rate_limit',
  'throttle',
  'retention',
  'secret_hint',
  'headers',
  'metadata',
  'signature_scheme',
  'previous_secret_expires_at',
  'last_attempt',
  'created_at',
  'updated_at',
].sort();

for (const engine of ENGINES) {
  describe(`endpoints: create, list, get, update, delete [${engine}]`, () => {
    let h: TestHerald;
    before(async () => {
      h = await createTestHerald(engine);
    });
    after(async () => {
      await h.close();
    });

    test('create answers 201 with the endpoint and its secret, not cacheable', async () => {
      const res = await h.api('POST', '/v1/endpoints', {
        url: 'https://hooks.example.com/herald',
        description: 'Ops backend',
        event_types: ['alarm.resolved', 'alarm.created', 'alarm.created'],
      });
      assert.equal(res.status, 201);
      assert.equal(res.headers['cache-control'], 'no-store');
      assert.deepEqual(Object.keys(res.json).sort(), [...ENDPOINT_FIELDS, 'secret'].sort());
      assert.match(res.json.id, /^[0-9a-f-]{36}$/);
      assert.equal(res.json.url, 'https://hooks.example.com/herald');
      assert.equal(res.json.description, 'Ops backend');
      assert.deepEqual(res.json.event_types, ['alarm.created', 'alarm.resolved'], 'deduplicated and sorted');
      assert.equal(res.json.state, 'enabled');
      assert.equal(res.json.failure_streak, 0);
      assert.equal(res.json.failure_threshold, 20);
      assert.equal(res.json.disabled_reason, null);
      assert.equal(res.json.disabled_at, null);
      assert.match(res.json.secret, /^whsec_[A-Za-z0-9_-]{43}$/);
      assert.equal(res.json.secret_hint, `${res.json.secret.slice(0, 10)}…`);
    });

    test('get returns what create stored, without the secret', async () => {
      const created = await h.api('POST', '/v1/endpoints', { url: 'https://a.example.com/x?tenant=7', event_types: ['shipment.created'] });
      const got = await h.api('GET', `/v1/endpoints/${created.json.id}`);
      assert.equal(got.status, 200);
      assert.deepEqual(Object.keys(got.json).sort(), ENDPOINT_FIELDS);
      const { secret: _secret, ...rest } = created.json;
      assert.deepEqual(got.json, rest);
      assert.equal(got.json.url, 'https://a.example.com/x?tenant=7');
      assert.equal(got.json.description, '');
    });

    test('get of an id that does not exist is 404 not_found', async () => {
      const res = await h.api('GET', '/v1/endpoints/00000000-0000-4000-8000-000000000000');
      assert.equal(res.status, 404);
      assert.equal(res.json.code, 'not_found');
    });

    test('list pages through every endpoint in creation order with a cursor', async () => {
      const { apiKey } = await h.newAccount('Paging Co');
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        const res = await h.api('POST', '/v1/endpoints', { url: `https://p${i}.example.com/hook`, event_types: ['alarm.created'] }, apiKey);
        assert.equal(res.status, 201);
        ids.push(res.json.id);
      }
      const seen: string[] = [];
      const pages: number[] = [];
      let cursor: string | null = null;
      do {
        const res = await h.api('GET', `/v1/endpoints?limit=2${cursor ? `&cursor=${cursor}` : ''}`, undefined, apiKey);
        assert.equal(res.status, 200);
        for (const e of res.json.data) {
          assert.deepEqual(Object.keys(e).sort(), ENDPOINT_FIELDS);
          seen.push(e.id);
        }
        pages.push(res.json.data.length);
        cursor = res.json.next_cursor;
      } while (cursor);
      assert.deepEqual(pages, [2, 2, 1]);
      assert.deepEqual(seen, ids);

      // The endpoint a cursor names is deleted before the next page is asked for: paging goes on after it.
      const first = await h.api('GET', '/v1/endpoints?limit=2', undefined, apiKey);
      assert.equal((await h.api('DELETE', `/v1/endpoints/${ids[1]}`, undefined, apiKey)).status, 204);
      const next = await h.api('GET', `/v1/endpoints?limit=2&cursor=${first.json.next_cursor}`, undefined, apiKey);
      assert.equal(next.status, 200);
      assert.deepEqual(next.json.data.map((e: { id: string }) => e.id), ids.slice(2, 4));
      // A bare id, the cursor of earlier versions, still pages.
      const legacy = await h.api('GET', `/v1/endpoints?limit=2&cursor=${ids[2]}`, undefined, apiKey);
      assert.deepEqual(legacy.json.data.map((e: { id: string }) => e.id), ids.slice(3, 5));
      // A bare id of a deleted endpoint says so instead of ending the list there.
      const stale = await h.api('GET', `/v1/endpoints?limit=2&cursor=${ids[1]}`, undefined, apiKey);
      assert.equal(stale.status, 400);
      assert.equal(stale.json.code, 'validation_failed');
      assert.match(stale.json.errors[0].message, /names nothing in this account \(deleted since\?\); start again without it/);
      ids.splice(1, 1);

      // Not cursors, though they look like ids: a clear 400 each, never a database error.
      const b64 = (s: string) => Buffer.from(s, 'latin1').toString('base64url');
      for (const bad of ['a'.repeat(36), '-'.repeat(36), 'ab'.repeat(16), b64(`1700000000000000.${'-'.repeat(36)}`), b64(`1.${'f'.repeat(36)}`), 'nonsense', b64('12.')]) {
        const res = await h.api('GET', `/v1/endpoints?limit=2&cursor=${bad}`, undefined, apiKey);
        assert.equal(res.status, 400, bad);
        assert.equal(res.json.code, 'validation_failed', bad);
        assert.equal(res.json.errors[0].field, 'query.cursor', bad);
      }

      const all = await h.api('GET', '/v1/endpoints', undefined, apiKey);
      assert.deepEqual(all.json.data.map((e: { id: string }) => e.id), ids, 'default page size covers them');
      assert.equal(all.json.next_cursor, null);
      const exact = await h.api('GET', '/v1/endpoints?limit=4', undefined, apiKey);
      assert.equal(exact.json.data.length, 4);
      assert.equal(exact.json.next_cursor, null, 'no next page when the last page is exactly full');
    });

    test('list of an account without endpoints is empty', async () => {
      const { apiKey } = await h.newAccount('Empty Co');
      const res = await h.api('GET', '/v1/endpoints', undefined, apiKey);
      assert.equal(res.status, 200);
      assert.deepEqual(res.json, { data: [], next_cursor: null });
    });

    test('update changes only the fields sent and keeps the secret', async () => {
      const created = await h.api('POST', '/v1/endpoints', { url: 'https://old.example.com/hook', description: 'before', event_types: ['alarm.created'] });
      const id = created.json.id;
      const url = await h.api('PATCH', `/v1/endpoints/${id}`, { url: 'https://new.example.com/hook' });
      assert.equal(url.status, 200);
      assert.equal(url.json.url, 'https://new.example.com/hook');
      assert.equal(url.json.description, 'before');
      assert.deepEqual(url.json.event_types, ['alarm.created']);
      assert.equal(url.json.secret, undefined);

      const types = await h.api('PATCH', `/v1/endpoints/${id}`, { event_types: ['shipment.completed', 'shipment.created'], description: 'after' });
      assert.equal(types.status, 200);
      assert.deepEqual(types.json.event_types, ['shipment.completed', 'shipment.created']);
      assert.equal(types.json.description, 'after');
      assert.equal(types.json.url, 'https://new.example.com/hook');
      assert.equal(types.json.secret_hint, created.json.secret_hint);

      const nothing = await h.api('PATCH', `/v1/endpoints/${id}`, {});
      assert.equal(nothing.status, 200);
      assert.equal(nothing.json.url, 'https://new.example.com/hook');

      const got = await h.api('GET', `/v1/endpoints/${id}`);
      assert.deepEqual(got.json, nothing.json);
      const stored = await h.db.query<{ secret_hint: string }>('SELECT secret_hint FROM endpoints WHERE id = $1', [id]);
      assert.equal(stored.rows[0]!.secret_hint, created.json.secret_hint);
    });

    test('update of an id that does not exist is 404', async () => {
      const res = await h.api('PATCH', '/v1/endpoints/00000000-0000-4000-8000-000000000000', { description: 'x' });
      assert.equal(res.status, 404);
      assert.equal(res.json.code, 'not_found');
    });

    test('delete answers 204, then the endpoint is gone from get, list and update', async () => {
      const { apiKey } = await h.newAccount('Delete Co');
      const keep = await h.api('POST', '/v1/endpoints', { url: 'https://keep.example.com/', event_types: ['alarm.created'] }, apiKey);
      const gone = await h.api('POST', '/v1/endpoints', { url: 'https://gone.example.com/', event_types: ['alarm.created'] }, apiKey);
      const del = await h.api('DELETE', `/v1/endpoints/${gone.json.id}`, undefined, apiKey);
      assert.equal(del.status, 204);
      assert.equal(del.json, undefined);
      assert.equal((await h.api('GET', `/v1/endpoints/${gone.json.id}`, undefined, apiKey)).status, 404);
      assert.equal((await h.api('PATCH', `/v1/endpoints/${gone.json.id}`, { description: 'x' }, apiKey)).status, 404);
      const again = await h.api('DELETE', `/v1/endpoints/${gone.json.id}`, undefined, apiKey);
      assert.equal(again.status, 404);
      assert.equal(again.json.code, 'not_found');
      const list = await h.api('GET', '/v1/endpoints', undefined, apiKey);
      assert.deepEqual(list.json.data.map((e: { id: string }) => e.id), [keep.json.id]);
    });

    test('deleting an endpoint removes its deliveries, not the event', async () => {
      const ep = await h.api('POST', '/v1/endpoints', { url: 'https://cascade.example.com/', event_types: ['shipment.completed'] });
      const ev = await h.api('POST', '/v1/events', { type: 'shipment.completed', data: { id: 1 } });
      assert.equal(ev.status, 202);
      assert.equal((await h.db.query('SELECT 1 FROM deliveries WHERE endpoint_id = $1', [ep.json.id])).rowCount, 1);
      assert.equal((await h.api('DELETE', `/v1/endpoints/${ep.json.id}`)).status, 204);
      assert.equal((await h.db.query('SELECT 1 FROM deliveries WHERE endpoint_id = $1', [ep.json.id])).rowCount, 0);
      const event = await h.api('GET', `/v1/events/${ev.json.id}`);
      assert.equal(event.status, 200);
      assert.ok(!event.json.deliveries.some((d: { endpoint_id: string }) => d.endpoint_id === ep.json.id));
    });
  });
}
