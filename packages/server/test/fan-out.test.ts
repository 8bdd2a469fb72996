import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ENGINES } from './helpers/engines.ts';
import { alarmData, createTestHerald, type TestHerald } from './helpers/herald.ts';

for (const engine of ENGINES) {
  describe(`an event fans out to exactly the subscribed, enabled endpoints of its account [${engine}]`, () => {
    let h: TestHerald;
    let other: { accountId: string; apiKey: string };
    const ep: Record<string, string> = {};

    before(async () => {
      h = await createTestHerald(engine);
      other = await h.newAccount('Other Account');
      const create = async (name: string, types: string[], as?: string) => {
        const res = await h.api('POST', '/v1/endpoints', { url: `https://${name}.example.com/hook`, event_types: types }, as);
        assert.equal(res.status, 201);
        ep[name] = res.json.id;
      };
      await create('alarms', ['alarm.created']);
      await create('everything', ['alarm.created', 'alarm.resolved', 'shipment.created', 'shipment.completed']);
      await create('disabled', ['alarm.created', 'shipment.created']);
      await create('shipments', ['shipment.created']);
      await create('resolved', ['alarm.resolved']);
      await create('foreign', ['alarm.created', 'shipment.created'], other.apiKey);
      // No API disables an endpoint yet (the dispatcher does, after 20 failures): set it as it would.
      await h.db.query(`UPDATE endpoints SET enabled = false, disabled_reason = 'test', disabled_at = now() WHERE id = $1`, [ep.disabled]);
    });
    after(async () => {
      await h.close();
    });

    const deliveriesOf = async (eventId: string) => {
      const { rows } = await h.db.query<{ endpoint_id: string; state: string; attempts: number }>(
        'SELECT endpoint_id, state, attempts FROM deliveries WHERE event_id = $1',
        [eventId],
      );
      const byName = Object.fromEntries(Object.entries(ep).map(([name, id]) => [id, name]));
      return Object.fromEntries(rows.map((r) => [byName[r.endpoint_id]!, r.state]));
    };

    test('alarm.created: pending for each enabled subscriber, skipped for the disabled one, nothing for the rest', async () => {
      const res = await h.api('POST', '/v1/events', { type: 'alarm.created', data: alarmData() });
      assert.equal(res.status, 202);
      assert.deepEqual(await deliveriesOf(res.json.id), { alarms: 'pending', everything: 'pending', disabled: 'skipped' });
    });

    test('each type reaches only its own subscribers', async () => {
      const shipment = await h.api('POST', '/v1/events', { type: 'shipment.created', data: { id: 1 } });
      assert.deepEqual(await deliveriesOf(shipment.json.id), { everything: 'pending', disabled: 'skipped', shipments: 'pending' });
      const completed = await h.api('POST', '/v1/events', { type: 'shipment.completed', data: { id: 1 } });
      assert.deepEqual(await deliveriesOf(completed.json.id), { everything: 'pending' });
      const resolved = await h.api('POST', '/v1/events', { type: 'alarm.resolved', data: alarmData({ resolved: true, resolved_at: '2026-11-20T09:00:00.000Z' }) });
      assert.deepEqual(await deliveriesOf(resolved.json.id), { everything: 'pending', resolved: 'pending' });
    });

    test('a batch fans out each event by its own type', async () => {
      const res = await h.api('POST', '/v1/events/batch', {
        events: [
          { type: 'shipment.completed', data: { id: 2 } },
          { type: 'alarm.created', data: alarmData() },
        ],
      });
      assert.equal(res.status, 202);
      assert.deepEqual(await deliveriesOf(res.json.data[0].id), { everything: 'pending' });
      assert.deepEqual(await deliveriesOf(res.json.data[1].id), { alarms: 'pending', everything: 'pending', disabled: 'skipped' });
    });

    test("another account's event reaches only that account's endpoints", async () => {
      const res = await h.api('POST', '/v1/events', { type: 'alarm.created', data: alarmData() }, other.apiKey);
      assert.equal(res.status, 202);
      assert.deepEqual(await deliveriesOf(res.json.id), { foreign: 'pending' });
    });

    test('an event with no subscriber is stored with no deliveries', async () => {
      const { apiKey } = await h.newAccount('Quiet Co');
      const res = await h.api('POST', '/v1/events', { type: 'alarm.created', data: alarmData() }, apiKey);
      assert.equal(res.status, 202);
      assert.deepEqual(await deliveriesOf(res.json.id), {});
      const got = await h.api('GET', `/v1/events/${res.json.id}`, undefined, apiKey);
      assert.deepEqual(got.json.deliveries, []);
    });

    test('a new delivery is due now, with no attempts yet, and GET /v1/events/:id shows each one', async () => {
      const res = await h.api('POST', '/v1/events', { type: 'alarm.created', data: alarmData() });
      const { rows } = await h.db.query<{ state: string; attempts: number; next_attempt_at: Date; in_flight: boolean; account_id: string }>(
        'SELECT state, attempts, next_attempt_at, EXISTS (SELECT 1 FROM in_flight f WHERE f.delivery_id = d.id) AS in_flight, account_id FROM deliveries d WHERE event_id = $1',
        [res.json.id],
      );
      for (const d of rows) {
        assert.equal(d.attempts, 0);
        assert.equal(d.in_flight, false);
        assert.equal(d.account_id, h.accountId);
        assert.equal(d.next_attempt_at.toISOString(), h.clock.now().toISOString());
      }
      const got = await h.api('GET', `/v1/events/${res.json.id}`);
      assert.equal(got.status, 200);
      assert.equal(got.json.id, res.json.id);
      assert.equal(got.json.type, 'alarm.created');
      assert.deepEqual(got.json.payload.data, alarmData());
      const states = Object.fromEntries(got.json.deliveries.map((d: { endpoint_id: string; state: string }) => [d.endpoint_id, d.state]));
      assert.deepEqual(states, { [ep.alarms!]: 'pending', [ep.everything!]: 'pending', [ep.disabled!]: 'skipped' });
      const skipped = got.json.deliveries.find((d: { state: string }) => d.state === 'skipped');
      assert.equal(skipped.next_attempt_at, null, 'a skipped delivery is not scheduled');
      const pending = got.json.deliveries.find((d: { state: string }) => d.state === 'pending');
      assert.equal(pending.next_attempt_at, h.clock.now().toISOString());
      assert.equal(pending.attempts, 0);
    });

    test('delivery ids are time-ordered: version 7, the event\'s acceptance time in their first 48 bits', async () => {
      const idsOf = async (eventId: string) =>
        (await h.db.query<{ id: string }>('SELECT id FROM deliveries WHERE event_id = $1', [eventId])).rows.map((r) => r.id);
      const msOf = (uuid: string) => parseInt(uuid.replaceAll('-', '').slice(0, 12), 16);
      const first = await h.api('POST', '/v1/events', { type: 'alarm.created', data: alarmData() });
      const firstAt = h.clock.now().getTime();
      h.clock.advance(1500);
      const second = await h.api('POST', '/v1/events', { type: 'alarm.created', data: alarmData() });
      const [early, late] = [await idsOf(first.json.id), await idsOf(second.json.id)];
      assert.equal(early.length, 3);
      for (const id of [...early, ...late]) assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      assert.deepEqual(early.map(msOf), [firstAt, firstAt, firstAt]);
      assert.deepEqual(late.map(msOf), [firstAt + 1500, firstAt + 1500, firstAt + 1500]);
      assert.ok(late.every((l) => early.every((e) => l > e)), 'a later event\'s deliveries sort after an earlier one\'s');
      assert.equal(new Set([...early, ...late]).size, 6);
    });

    test('subscriptions changed by update apply to the next event', async () => {
      await h.api('PATCH', `/v1/endpoints/${ep.shipments}`, { event_types: ['shipment.completed'] });
      const created = await h.api('POST', '/v1/events', { type: 'shipment.created', data: { id: 3 } });
      assert.deepEqual(await deliveriesOf(created.json.id), { everything: 'pending', disabled: 'skipped' });
      const completed = await h.api('POST', '/v1/events', { type: 'shipment.completed', data: { id: 3 } });
      assert.deepEqual(await deliveriesOf(completed.json.id), { everything: 'pending', shipments: 'pending' });
    });
  });
}
