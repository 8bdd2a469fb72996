import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { ENGINES } from './helpers/engines.ts';
import { alarmData, createTestHerald, type TestHerald } from './helpers/herald.ts';
import { assertProblem } from './helpers/problem.ts';

for (const engine of ENGINES) {
  describe(`a producer-supplied event id makes publishing idempotent [${engine}]`, () => {
    let h: TestHerald;
    let endpoints: string[];
    before(async () => {
      h = await createTestHerald(engine);
      endpoints = [];
      for (const types of [['alarm.created'], ['alarm.created', 'alarm.resolved'], ['alarm.created']]) {
        endpoints.push((await h.api('POST', '/v1/endpoints', { url: `https://e${endpoints.length}.example.com/`, event_types: types })).json.id);
      }
    });
    after(async () => {
      await h.close();
    });

    const rowsOf = async (id: string) => ({
      events: (await h.db.query('SELECT 1 FROM events WHERE id = $1', [id])).rowCount,
      deliveries: (await h.db.query<{ endpoint_id: string }>('SELECT endpoint_id FROM deliveries WHERE event_id = $1 ORDER BY endpoint_id', [id])).rows.map(
        (r) => r.endpoint_id,
      ),
    });

    test('50 concurrent publishes of the same id store one event and one delivery per subscribed endpoint', async () => {
      const id = randomUUID();
      const body = { id, type: 'alarm.created', data: alarmData() };
      const results = await Promise.all(Array.from({ length: 50 }, () => h.api('POST', '/v1/events', body)));
      for (const r of results) {
        assert.equal(r.status, 202, JSON.stringify(r.json));
        assert.equal(r.json.id, id);
        assert.equal(r.json.type, 'alarm.created');
      }
      assert.equal(results.filter((r) => r.json.duplicate === false).length, 1, 'exactly one publish created it');
      assert.equal(results.filter((r) => r.headers['idempotent-replayed'] === 'true').length, 49);
      assert.equal(new Set(results.map((r) => r.json.created_at)).size, 1, 'every answer carries the original created_at');
      const rows = await rowsOf(id);
      assert.equal(rows.events, 1);
      assert.deepEqual(rows.deliveries, [...endpoints].sort());
    });

    test('50 concurrent batches containing the same ids store each event once', async () => {
      const ids = [randomUUID(), randomUUID()];
      const batch = { events: ids.map((id, i) => ({ id, type: 'alarm.created', data: alarmData({ message: `batch ${i}` }) })) };
      const results = await Promise.all(Array.from({ length: 50 }, () => h.api('POST', '/v1/events/batch', batch)));
      for (const r of results) assert.equal(r.status, 202, JSON.stringify(r.json));
      for (const [i, id] of ids.entries()) {
        assert.equal(results.filter((r) => r.json.data[i].duplicate === false).length, 1);
        const rows = await rowsOf(id);
        assert.equal(rows.events, 1);
        assert.equal(rows.deliveries.length, endpoints.length);
      }
    });

    test('concurrent batches sharing ids in opposite orders both succeed (no deadlock) and answer in their own order', async () => {
      const ids = Array.from({ length: 20 }, () => randomUUID());
      const event = (id: string) => ({ id, type: 'alarm.created', data: alarmData({ message: id }) });
      for (let round = 0; round < 10; round++) {
        const fresh = ids.map((id) => `${id.slice(0, -1)}${round}`);
        const [forward, backward] = await Promise.all([
          h.api('POST', '/v1/events/batch', { events: fresh.map(event) }),
          h.api('POST', '/v1/events/batch', { events: [...fresh].reverse().map(event) }),
        ]);
        assert.equal(forward.status, 202, JSON.stringify(forward.json));
        assert.equal(backward.status, 202, JSON.stringify(backward.json));
        assert.deepEqual(forward.json.data.map((e: { id: string }) => e.id), fresh);
        assert.deepEqual(backward.json.data.map((e: { id: string }) => e.id), [...fresh].reverse());
        const created = [...forward.json.data, ...backward.json.data].filter((e: { duplicate: boolean }) => !e.duplicate);
        assert.equal(created.length, fresh.length, 'each id created once, by one batch or the other');
      }
    });

    test('publishing again later returns the original event and creates nothing, whatever the key order', async () => {
      const id = randomUUID();
      const first = await h.api('POST', '/v1/events', { id, type: 'alarm.created', data: alarmData() });
      assert.equal(first.status, 202);
      assert.equal(first.json.duplicate, false);
      assert.equal(first.headers['idempotent-replayed'], undefined);
      h.clock.advance(60_000);
      const reordered = Object.fromEntries(Object.entries(alarmData()).reverse());
      const again = await h.api('POST', '/v1/events', { data: reordered, type: 'alarm.created', id: id.toUpperCase() });
      assert.equal(again.status, 202);
      assert.deepEqual(again.json, { ...first.json, duplicate: true });
      assert.equal(again.headers['idempotent-replayed'], 'true');
      const rows = await rowsOf(id);
      assert.equal(rows.events, 1);
      assert.equal(rows.deliveries.length, endpoints.length);
    });

    test('the same id with a different body is 409 event_id_conflict and changes nothing', async () => {
      const id = randomUUID();
      await h.api('POST', '/v1/events', { id, type: 'alarm.created', data: alarmData() });
      const stored = await h.db.query<{ body: Buffer }>('SELECT body FROM events WHERE id = $1', [id]);

      const otherData = await h.api('POST', '/v1/events', { id, type: 'alarm.created', data: alarmData({ message: 'something else' }) });
      assertProblem(otherData, 'event_id_conflict', 'id');
      assert.match(otherData.json.detail, /new id/);
      const otherType = await h.api('POST', '/v1/events', { id, type: 'alarm.resolved', data: alarmData({ resolved: true, resolved_at: '2026-11-20T09:00:00.000Z' }) });
      assertProblem(otherType, 'event_id_conflict', 'id');

      const after = await h.db.query<{ body: Buffer }>('SELECT body FROM events WHERE id = $1', [id]);
      assert.ok(after.rows[0]!.body.equals(stored.rows[0]!.body), 'the stored envelope is untouched');
      assert.equal((await rowsOf(id)).deliveries.length, endpoints.length);
    });

    test('concurrent publishes of one id with different bodies: one wins, the rest conflict', async () => {
      const id = randomUUID();
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) => h.api('POST', '/v1/events', { id, type: 'alarm.created', data: alarmData({ message: `variant ${i}` }) })),
      );
      assert.equal(results.filter((r) => r.status === 202).length, 1);
      assert.equal(results.filter((r) => r.status === 409 && r.json.code === 'event_id_conflict').length, 19);
      const rows = await rowsOf(id);
      assert.equal(rows.events, 1);
      assert.equal(rows.deliveries.length, endpoints.length);
    });

    test('without an id, every publish is a new event', async () => {
      const body = { type: 'alarm.created', data: alarmData() };
      const a = await h.api('POST', '/v1/events', body);
      const b = await h.api('POST', '/v1/events', body);
      assert.notEqual(a.json.id, b.json.id);
      // Version 7, time-ordered (docs/decisions/0009): stamped with the time of the publish.
      for (const id of [a.json.id, b.json.id]) {
        assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
        assert.equal(parseInt(id.replaceAll('-', '').slice(0, 12), 16), h.clock.now().getTime());
      }
      assert.equal(a.json.duplicate, false);
      assert.equal(b.json.duplicate, false);
    });

    test('the stored envelope is serialised once: id, type, created_at (ISO, ms, Z) and data as sent', async () => {
      const id = randomUUID();
      const res = await h.api('POST', '/v1/events', { id, type: 'alarm.created', data: alarmData() });
      assert.equal(res.json.created_at, h.clock.now().toISOString());
      const { rows } = await h.db.query<{ body: Buffer; created_at: Date }>('SELECT body, created_at FROM events WHERE id = $1', [id]);
      assert.ok(Buffer.isBuffer(rows[0]!.body));
      assert.equal(
        rows[0]!.body.toString('utf8'),
        JSON.stringify({ id, type: 'alarm.created', created_at: res.json.created_at, data: alarmData() }),
      );
      assert.equal(rows[0]!.created_at.toISOString(), res.json.created_at);
      const got = await h.api('GET', `/v1/events/${id}`);
      assert.deepEqual(got.json.payload, JSON.parse(rows[0]!.body.toString('utf8')));
    });
  });
}
