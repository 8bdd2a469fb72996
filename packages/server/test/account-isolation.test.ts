import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ENGINES } from './helpers/engines.ts';
import { alarmData, createTestHerald, type TestHerald } from './helpers/herald.ts';

for (const engine of ENGINES) {
  describe(`no account can see or touch another's data [${engine}]`, () => {
    let h: TestHerald;
    let other: { accountId: string; apiKey: string };
    let endpoint: { id: string; url: string; description: string };
    let eventId: string;

    before(async () => {
      h = await createTestHerald(engine);
      other = await h.newAccount('Rival Inc');
      const res = await h.api('POST', '/v1/endpoints', { url: 'https://mine.example.com/hook', description: 'mine', event_types: ['alarm.created'] });
      endpoint = res.json;
      const ev = await h.api('POST', '/v1/events', { type: 'alarm.created', data: alarmData() });
      assert.equal(ev.status, 202);
      eventId = ev.json.id;
    });
    after(async () => {
      await h.close();
    });

    test("another account's key gets 404 on get, update and delete of an endpoint, the same 404 as for no endpoint", async () => {
      const get = await h.api('GET', `/v1/endpoints/${endpoint.id}`, undefined, other.apiKey);
      assert.equal(get.status, 404);
      assert.equal(get.json.code, 'not_found');
      const patch = await h.api('PATCH', `/v1/endpoints/${endpoint.id}`, { url: 'https://evil.example.com/', description: 'hijacked' }, other.apiKey);
      assert.equal(patch.status, 404);
      assert.equal(patch.json.code, 'not_found');
      const del = await h.api('DELETE', `/v1/endpoints/${endpoint.id}`, undefined, other.apiKey);
      assert.equal(del.status, 404);
      assert.equal(del.json.code, 'not_found');

      const missing = await h.api('GET', '/v1/endpoints/00000000-0000-4000-8000-000000000000', undefined, other.apiKey);
      assert.equal(get.json.detail.replace(endpoint.id, '<id>'), missing.json.detail.replace('00000000-0000-4000-8000-000000000000', '<id>'));

      const mine = await h.api('GET', `/v1/endpoints/${endpoint.id}`);
      assert.equal(mine.status, 200);
      assert.equal(mine.json.url, 'https://mine.example.com/hook');
      assert.equal(mine.json.description, 'mine');
    });

    test("another account's list does not include the endpoint, and its cursor cannot be used to reach it", async () => {
      const list = await h.api('GET', '/v1/endpoints', undefined, other.apiKey);
      assert.deepEqual(list.json, { data: [], next_cursor: null });
      // Refused exactly as an id that exists nowhere: the answer tells nothing about the other account.
      const paged = await h.api('GET', `/v1/endpoints?cursor=${endpoint.id}`, undefined, other.apiKey);
      const nowhere = await h.api('GET', '/v1/endpoints?cursor=00000000-0000-4000-8000-000000000000', undefined, other.apiKey);
      assert.equal(paged.status, 400);
      assert.equal(paged.json.code, 'validation_failed');
      assert.deepEqual({ ...paged.json, instance: undefined }, { ...nowhere.json, instance: undefined });
    });

    test("another account's key cannot read an event", async () => {
      const res = await h.api('GET', `/v1/events/${eventId}`, undefined, other.apiKey);
      assert.equal(res.status, 404);
      assert.equal(res.json.code, 'not_found');
      assert.ok(!JSON.stringify(res.json).includes('alarm.created'));
      assert.equal((await h.api('GET', `/v1/events/${eventId}`)).status, 200);
    });

    test("another account cannot find, count or replay the events, nor see a replay", async () => {
      assert.deepEqual((await h.api('GET', `/v1/events?id=${eventId}`, undefined, other.apiKey)).json, { data: [], next_cursor: null });
      assert.deepEqual((await h.api('GET', `/v1/events?endpoint_id=${endpoint.id}`, undefined, other.apiKey)).json.data, []);
      assert.deepEqual((await h.api('GET', '/v1/events/count', undefined, other.apiKey)).json, { count: 0, capped: false });
      const replay = await h.api('POST', '/v1/replays', { event_ids: [eventId], endpoint_id: endpoint.id, dry_run: true }, other.apiKey);
      assert.equal(replay.status, 404, 'the endpoint is not theirs');
      const all = await h.api('POST', '/v1/replays', { event_ids: [eventId] }, other.apiKey);
      assert.equal(all.json.code, 'nothing_to_replay', 'the event is not theirs');
      const mine = await h.api('POST', '/v1/replays', { event_ids: [eventId] });
      assert.equal(mine.status, 202);
      assert.equal((await h.api('GET', `/v1/replays/${mine.json.id}`, undefined, other.apiKey)).status, 404);
      assert.deepEqual((await h.api('GET', '/v1/replays', undefined, other.apiKey)).json.data, []);
      assert.equal((await h.api('POST', `/v1/replays/${mine.json.id}/cancel`)).status, 200);
    });

    test('the same event id in two accounts is two separate events', async () => {
      const res = await h.api('POST', '/v1/events', { id: eventId, type: 'shipment.created', data: { id: 9 } }, other.apiKey);
      assert.equal(res.status, 202, 'not a conflict: the id belongs to another account');
      assert.equal(res.json.duplicate, false);
      assert.equal((await h.api('GET', `/v1/events/${eventId}`, undefined, other.apiKey)).json.type, 'shipment.created');
      assert.equal((await h.api('GET', `/v1/events/${eventId}`)).json.type, 'alarm.created');
    });

    test("publishing with another account's key never reaches this account's endpoints", async () => {
      const res = await h.api('POST', '/v1/events', { type: 'alarm.created', data: alarmData() }, other.apiKey);
      assert.equal(res.status, 202);
      const deliveries = await h.db.query('SELECT 1 FROM deliveries WHERE event_id = $1 AND account_id = $2', [res.json.id, other.accountId]);
      assert.equal(deliveries.rowCount, 0);
      assert.equal((await h.db.query('SELECT 1 FROM deliveries WHERE endpoint_id = $1', [endpoint.id])).rowCount, 1, 'only its own event');
    });
  });
}
