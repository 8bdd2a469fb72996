import { after, before, describe, mock, test } from 'node:test';
import assert from 'node:assert/strict';
import { systemClock } from '../src/core/clock.ts';
import { createServiceDeps, type ServiceDeps } from '../src/services/deps.ts';
import { recoverEndpoint } from '../src/services/endpoint-state.ts';
import { publishEvents } from '../src/services/events.ts';
import { redeliverEvent } from '../src/services/redeliver.ts';
import { ENGINES } from './helpers/engines.ts';
import { alarmData, createTestHerald, TEST_ADDRESSES, TEST_KEY, type TestHerald } from './helpers/herald.ts';

/**
 * Due times follow the database's clock, whatever the clock of the process
 * that writes them: a publisher whose clock is an hour behind must not write
 * deliveries that the claim (on the database's clock) sees as due an hour
 * ago, nor one an hour ahead deliveries that wait an hour. The process's
 * clock is set an hour behind here (the services then run on the system
 * clock, as in production); the envelope's created_at keeps the process's
 * time, the time it was accepted and signed with.
 *
 * PostgreSQL only: the embedded database runs inside the process, on the
 * process's own clock, so there the two cannot differ.
 */
const HOUR = 3_600_000;

for (const engine of ENGINES.filter((e) => e === 'postgres')) {
  describe(`due times on the database's clock [${engine}]`, () => {
    let h: TestHerald;
    let deps: ServiceDeps;
    before(async () => {
      h = await createTestHerald(engine);
      deps = createServiceDeps({ db: h.db, encryptionKey: TEST_KEY, clock: systemClock, addresses: TEST_ADDRESSES });
    });
    after(async () => {
      await h.close();
    });

    /** How far a delivery's due time and creation are from the database's now, in ms. */
    async function offsets(id: string): Promise<{ due: number; created: number }> {
      const { rows } = await h.db.query<{ due: number; created: number }>(
        `SELECT extract(epoch FROM next_attempt_at - now()) * 1000 AS due, extract(epoch FROM created_at - now()) * 1000 AS created FROM deliveries WHERE id = $1`,
        [id],
      );
      return { due: Number(rows[0]!.due), created: Number(rows[0]!.created) };
    }
    const near = (ms: number, what: string) => assert.ok(Math.abs(ms) < 60_000, `${what} is ${Math.round(ms / 1000)} s from the database's now`);

    /** Runs `fn` with the process's clock an hour behind the database's. */
    async function behind<T>(fn: () => Promise<T>): Promise<T> {
      mock.timers.enable({ apis: ['Date'], now: Date.now() - HOUR });
      try {
        return await fn();
      } finally {
        mock.timers.reset();
      }
    }

    test('publishing (one event, and a batch), redelivering and recovering write due times from the database, not the process', async () => {
      const endpoint = (await h.api('POST', '/v1/endpoints', { url: 'https://hooks.example.com/clock', event_types: ['alarm.created'] })).json.id;
      const [one] = await behind(() => publishEvents(deps, h.accountId, [{ type: 'alarm.created', data: alarmData() }], { batch: false }));
      const batch = await behind(() => publishEvents(deps, h.accountId, [{ type: 'alarm.created', data: alarmData() }, { type: 'alarm.created', data: alarmData() }], { batch: true }));
      for (const e of [one!, ...batch]) {
        const { rows } = await h.db.query<{ id: string; lag: number }>(
          `SELECT d.id, extract(epoch FROM now() - ev.created_at) * 1000 AS lag FROM deliveries d JOIN events ev ON ev.account_id = d.account_id AND ev.id = d.event_id WHERE d.event_id = $1`,
          [e.id],
        );
        assert.equal(rows.length, 1);
        assert.ok(Number(rows[0]!.lag) > HOUR - 60_000, 'the event keeps the time the process accepted it at');
        const o = await offsets(rows[0]!.id);
        near(o.due, 'a published delivery\'s due time');
        near(o.created, 'a published delivery\'s creation');
      }

      // Redelivered: a finished delivery again, and one for an endpoint subscribed later.
      await h.db.query(`UPDATE deliveries SET state = 'failed', next_attempt_at = now() - interval '1 day' WHERE event_id = $1`, [one!.id]);
      const again = await behind(() => redeliverEvent(deps, h.accountId, one!.id, { endpoint_id: endpoint }));
      near((await offsets(again.id)).due, 'a redelivered delivery\'s due time');
      const later = (await h.api('POST', '/v1/endpoints', { url: 'https://hooks.example.com/later', event_types: ['alarm.created'] })).json.id;
      const added = await behind(() => redeliverEvent(deps, h.accountId, one!.id, { endpoint_id: later }));
      near((await offsets(added.id)).due, 'a new delivery\'s due time');
      near((await offsets(added.id)).created, 'a new delivery\'s creation');

      // Recovered.
      await h.db.query(`UPDATE deliveries SET state = 'failed', next_attempt_at = now() - interval '1 day' WHERE event_id = $1`, [batch[0]!.id]);
      const recovered = await behind(() => recoverEndpoint(deps, h.accountId, endpoint, { since: new Date(Date.now() - 2 * HOUR).toISOString() }));
      assert.ok(recovered.count >= 1);
      const { rows } = await h.db.query<{ id: string }>(`SELECT id FROM deliveries WHERE event_id = $1`, [batch[0]!.id]);
      near((await offsets(rows[0]!.id)).due, 'a recovered delivery\'s due time');
    });
  });
}
