import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ENGINES } from './helpers/engines.ts';
import { alarmData, createTestHerald, type TestHerald } from './helpers/herald.ts';
import { assertProblem } from './helpers/problem.ts';

const resolvedAlarm = () => alarmData({ resolved: true, resolved_at: '2026-11-20T09:02:41.000Z' });

for (const engine of ENGINES) {
  describe(`events are validated against their type before anything is stored [${engine}]`, () => {
    let h: TestHerald;
    const count = async (table: 'events' | 'deliveries') =>
      (await h.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`)).rows[0]!.n;

    before(async () => {
      h = await createTestHerald(engine);
      // A subscriber, so a wrongly accepted event would also leave deliveries behind.
      await h.api('POST', '/v1/endpoints', { url: 'https://hooks.example.com/', event_types: ['alarm.created', 'alarm.resolved', 'shipment.created', 'shipment.completed'] });
    });
    after(async () => {
      await h.close();
    });

    const publish = (body: unknown) => h.api('POST', '/v1/events', body);

    test('valid records of the four published types are accepted', async () => {
      const before = await count('events');
      for (const [type, data] of [
        ['alarm.created', alarmData()],
        ['alarm.created', alarmData({ shipment_id: null, message: '' })],
        ['alarm.resolved', resolvedAlarm()],
        ['shipment.created', { id: 48213, reference: 'PO-1', anything: { nested: true } }],
        ['shipment.completed', { id: 'SHP-48213' }],
      ] as const) {
        const res = await publish({ type, data });
        assert.equal(res.status, 202, `${type}: ${JSON.stringify(res.json)}`);
      }
      assert.equal(await count('events'), before + 5);
    });

    const invalid: Array<[string, Record<string, unknown>, string, string?]> = [
      ['alarm severity of the wrong type', { type: 'alarm.created', data: alarmData({ severity: 3 }) }, 'data.severity'],
      ['alarm severity empty', { type: 'alarm.created', data: alarmData({ severity: '' }) }, 'data.severity'],
      ['alarm without a source', { type: 'alarm.created', data: (({ source: _s, ...rest }) => rest)(alarmData()) }, 'data.source'],
      ['alarm device_id not a UUID', { type: 'alarm.created', data: alarmData({ device_id: 'sensor-7' }) }, 'data.device_id'],
      ['alarm shipment_id a string', { type: 'alarm.created', data: alarmData({ shipment_id: '48213' }) }, 'data.shipment_id'],
      ['alarm created_at not a timestamp', { type: 'alarm.created', data: alarmData({ created_at: 'yesterday' }) }, 'data.created_at'],
      ['alarm.created with resolved true', { type: 'alarm.created', data: alarmData({ resolved: true }) }, 'data.resolved', 'must be false'],
      ['alarm.created with resolved_at set', { type: 'alarm.created', data: alarmData({ resolved_at: '2026-11-20T09:00:00.000Z' }) }, 'data.resolved_at'],
      ['alarm.resolved with resolved false', { type: 'alarm.resolved', data: { ...resolvedAlarm(), resolved: false } }, 'data.resolved', 'must be true'],
      ['alarm.resolved without resolved_at', { type: 'alarm.resolved', data: { ...resolvedAlarm(), resolved_at: null } }, 'data.resolved_at'],
      ['shipment without id', { type: 'shipment.created', data: { reference: 'PO-1' } }, 'data.id', 'is required'],
      ['data not an object', { type: 'shipment.created', data: [48213] }, 'data'],
      ['data null', { type: 'shipment.created', data: null }, 'data'],
    ];
    for (const [what, body, field, message] of invalid) {
      test(`${what}: invalid_event_data naming ${field}`, async () => {
        const res = await publish(body);
        assertProblem(res, 'invalid_event_data', field);
        if (message) assert.equal(res.json.errors[0].message, message);
      });
    }

    test('a shipment id that is neither an integer nor a non-empty string is refused on data.id', async () => {
      for (const id of ['', 1.5, true, null]) {
        const res = await publish({ type: 'shipment.completed', data: { id } });
        assert.equal(res.status, 400);
        assert.equal(res.json.code, 'invalid_event_data');
        // The schema is an anyOf, so each branch reports; all of them about data.id.
        assert.deepEqual([...new Set(res.json.errors.map((e: { field: string }) => e.field))], ['data.id'], JSON.stringify(id));
      }
    });

    test('every problem of a record is listed, not only the first', async () => {
      const res = await publish({ type: 'alarm.created', data: alarmData({ severity: '', type: 5 }) });
      assert.equal(res.json.code, 'invalid_event_data');
      assert.deepEqual(res.json.errors.map((e: { field: string }) => e.field).sort(), ['data.severity', 'data.type']);
    });

    test('an unknown type is refused with unknown_event_type and where to find the catalog', async () => {
      const res = await publish({ type: 'alarm.exploded', data: {} });
      assertProblem(res, 'unknown_event_type', 'type');
      assert.match(res.json.detail, /GET \/v1\/event-types/);
    });

    test('a missing type or data is named', async () => {
      assertProblem(await publish({ data: alarmData() }), 'validation_failed', 'type');
      assertProblem(await publish({ type: 'alarm.created' }), 'validation_failed', 'data');
      assertProblem(await publish({ type: 5, data: alarmData() }), 'validation_failed', 'type');
    });

    test('a producer id that is not a UUID is refused, naming id', async () => {
      for (const id of ['evt_123', '', '6f1c2a7e9b3d4e58a1c42d7e8f9a0b1c', '6f1c2a7e-9b3d-4e58-a1c4-2d7e8f9a0b1g']) {
        const res = await publish({ id, type: 'alarm.created', data: alarmData() });
        assertProblem(res, 'validation_failed', 'id');
        assert.match(res.json.detail, /UUID/);
      }
      assertProblem(await publish({ id: 7, type: 'alarm.created', data: alarmData() }), 'validation_failed', 'id');
    });

    test('an unknown field beside id, type and data is refused', async () => {
      assertProblem(await publish({ type: 'alarm.created', data: alarmData(), created_at: '2026-11-20T08:00:00Z' }), 'validation_failed', 'created_at');
    });

    test('a batch with one bad item is refused whole, naming events[i], and stores nothing', async () => {
      const events = await count('events');
      const deliveries = await count('deliveries');
      const res = await h.api('POST', '/v1/events/batch', {
        events: [
          { type: 'alarm.created', data: alarmData() },
          { type: 'shipment.created', data: { id: 1 } },
          { type: 'alarm.created', data: alarmData({ severity: '' }) },
          { type: 'shipment.completed', data: { id: 2 } },
        ],
      });
      assertProblem(res, 'invalid_event_data', 'events[2].data.severity');
      assert.equal(await count('events'), events);
      assert.equal(await count('deliveries'), deliveries);
    });

    test('every bad item of a batch is named', async () => {
      const res = await h.api('POST', '/v1/events/batch', {
        events: [{ id: 'x', type: 'alarm.created', data: alarmData() }, { type: 'shipment.created', data: {} }, { type: 'nope.nope', data: {} }],
      });
      assert.equal(res.status, 400);
      assert.deepEqual(res.json.errors.map((e: { field: string }) => e.field), ['events[0].id', 'events[1].data.id', 'events[2].type']);
    });

    test('a batch item with an unknown field is named as events[i] too', async () => {
      const res = await h.api('POST', '/v1/events/batch', { events: [{ type: 'shipment.created', data: { id: 1 } }, { type: 'shipment.created', data: { id: 1 }, extra: true }] });
      assertProblem(res, 'validation_failed', 'events[1].extra');
    });

    test('a batch whose only fault is a conflicting id stores nothing either', async () => {
      const first = await publish({ type: 'shipment.created', data: { id: 77 } });
      const events = await count('events');
      const deliveries = await count('deliveries');
      const res = await h.api('POST', '/v1/events/batch', {
        events: [
          { type: 'shipment.created', data: { id: 78 } },
          { id: first.json.id, type: 'shipment.created', data: { id: 79 } },
        ],
      });
      assertProblem(res, 'event_id_conflict', 'events[1].id');
      assert.equal(await count('events'), events, 'the valid first item was rolled back');
      assert.equal(await count('deliveries'), deliveries);
    });

    test('a batch must hold 1 to 500 events', async () => {
      assertProblem(await h.api('POST', '/v1/events/batch', { events: [] }), 'validation_failed', 'events');
      assertProblem(await h.api('POST', '/v1/events/batch', {}), 'validation_failed', 'events');
      const tooMany = Array.from({ length: 501 }, (_, i) => ({ type: 'shipment.created', data: { id: i } }));
      const events = await count('events');
      assertProblem(await h.api('POST', '/v1/events/batch', { events: tooMany }), 'validation_failed', 'events');
      assert.equal(await count('events'), events);
    });

    test('a batch of 500 is accepted, in order', async () => {
      const events = Array.from({ length: 500 }, (_, i) => ({ type: 'shipment.created', data: { id: i } }));
      const res = await h.api('POST', '/v1/events/batch', { events });
      assert.equal(res.status, 202);
      assert.equal(res.json.data.length, 500);
      const stored = await h.db.query<{ body: Buffer }>('SELECT body FROM events WHERE id = $1', [res.json.data[499].id]);
      assert.deepEqual(JSON.parse(stored.rows[0]!.body.toString()).data, { id: 499 });
    });

    test('an event id that is not a UUID in GET /v1/events/:id is refused', async () => {
      assertProblem(await h.api('GET', '/v1/events/evt_1'), 'validation_failed', 'id');
    });
  });
}
