import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ENGINES } from './helpers/engines.ts';
import { createTestHerald, type TestHerald } from './helpers/herald.ts';
import { claimDeliveries, nextDueIn, reapAllLeases } from '../src/storage/queries/claim-deliveries.ts';
import type { Queryable } from '../src/storage/db.ts';

const LEASE_MS = 60_000;

for (const engine of ENGINES) {
  describe(`the lease: a claim writes no delivery row, and passes over rows in flight [${engine}]`, () => {
    let h: TestHerald;
    before(async () => (h = await createTestHerald(engine)));
    after(() => h.close());

    /** Publishes one event to the one endpoint of a new account; returns the endpoint, the event and the delivery. Nothing is sent: the tests claim by hand. */
    async function oneDelivery() {
      const { apiKey } = await h.newAccount('Lease Co');
      const endpoint = (await h.api('POST', '/v1/endpoints', { url: 'https://lease.example.com/hook', event_types: ['shipment.created'] }, apiKey)).json.id as string;
      const event = (await h.api('POST', '/v1/events', { type: 'shipment.created', data: { id: endpoint } }, apiKey)).json.id as string;
      const { rows } = await h.db.query<{ id: string }>('SELECT id FROM deliveries WHERE event_id = $1 AND endpoint_id = $2', [event, endpoint]);
      return { endpoint, event, delivery: rows[0]!.id, apiKey };
    }

    const claim = (db: Queryable = h.db, p: { limit?: number; endpointCap?: number } = {}) =>
      claimDeliveries(db, { now: h.clock.now(), limit: p.limit ?? 100, leaseMs: LEASE_MS, endpointCap: p.endpointCap ?? 100, originCap: 100 });

    const row = async (id: string) =>
      (
        await h.db.query<{ next_attempt_at: Date; attempts: number; lost_attempts: number; lease_until: Date | null; lease_token: number | null }>(
          `SELECT d.next_attempt_at, d.attempts, d.lost_attempts, f.lease_until, f.lease_token
             FROM deliveries d LEFT JOIN in_flight f ON f.delivery_id = d.id WHERE d.id = $1`,
          [id],
        )
      ).rows[0]!;

    const finish = (ids: string[]) =>
      h.db.query(`WITH gone AS (DELETE FROM in_flight WHERE delivery_id = ANY ($1::uuid[])) UPDATE deliveries SET state = 'succeeded' WHERE id = ANY ($1::uuid[])`, [ids]);

    test('a claim writes no delivery row: the lease is a row of in_flight, and users see the due time as it was', async () => {
      const { delivery, event, apiKey } = await oneDelivery();
      const before = await row(delivery);
      const updates = await h.db.transaction(async (tx) => {
        const claimed = await claim(tx);
        assert.deepEqual(
          claimed.map((c) => c.id),
          [delivery],
        );
        // This transaction's own counts: the claim changed no delivery row.
        const { rows } = await tx.query<{ upd: string }>(`SELECT n_tup_upd::text AS upd FROM pg_stat_xact_user_tables WHERE relname = 'deliveries'`);
        return rows[0]!.upd;
      });
      assert.equal(updates, '0');

      const after = await row(delivery);
      assert.equal(after.next_attempt_at.getTime(), before.next_attempt_at.getTime(), 'next_attempt_at is where it was');
      assert.equal(after.lease_until?.getTime(), h.clock.now().getTime() + LEASE_MS);
      assert.notEqual(after.lease_token, null);
      assert.equal(after.attempts, 0, 'attempts are counted when answered');

      const shown = (await h.api('GET', `/v1/events/${event}`, undefined, apiKey)).json;
      const d = shown.deliveries.find((x: { id: string }) => x.id === delivery);
      assert.equal(d.state, 'pending');
      assert.equal(d.next_attempt_at, before.next_attempt_at.toISOString());
      await finish([delivery]);
    });

    test('a leased row is passed over until its lease runs out; then it is due after a back-off, and claimed with a new token for the same attempt', async () => {
      const { delivery } = await oneDelivery();
      const [first] = await claim();
      assert.equal(first?.id, delivery);
      assert.equal(first!.attempt, 1);

      h.clock.advance(LEASE_MS - 1);
      assert.deepEqual(await claim(), [], 'the lease still runs');
      // An idle worker's wake-up passes over it too: nothing else is due.
      assert.equal(await nextDueIn(h.db, h.clock.now()), undefined);

      h.clock.advance(1);
      assert.deepEqual(await claim(), [], 'reaped, and due again 30 s later');
      assert.equal(await nextDueIn(h.db, h.clock.now()), 30_000);
      h.clock.advance(30_000);
      const [second] = await claim();
      assert.equal(second?.id, delivery);
      assert.equal(second!.attempt, 1, 'a lost lease spends no attempt');
      assert.equal((await row(delivery)).lost_attempts, 1);
      assert.notEqual(second!.lease_token, first!.lease_token, 'a new fencing token');
      await finish([delivery]);
    });

    test("a claim passes over an endpoint's rows in flight and takes its next due one", async () => {
      const e = await oneDelivery();
      for (let i = 0; i < 2; i++) {
        h.clock.advance(1);
        await h.api('POST', '/v1/events', { type: 'shipment.created', data: { id: `${e.endpoint}-${i}` } }, e.apiKey);
      }
      const ids = (await h.db.query<{ id: string }>(`SELECT id FROM deliveries WHERE endpoint_id = $1 ORDER BY next_attempt_at`, [e.endpoint])).rows.map((r) => r.id);
      const first = await claim(h.db, { limit: 2, endpointCap: 3 });
      assert.deepEqual(
        first.map((c) => c.id),
        ids.slice(0, 2),
      );
      const second = await claim(h.db, { limit: 2, endpointCap: 3 });
      assert.deepEqual(
        second.map((c) => c.id),
        [ids[2]],
      );
      assert.deepEqual(await claim(h.db, { limit: 2, endpointCap: 3 }), [], 'nothing of it is left that is not in flight');
      await finish(ids);
    });

    test('nextDueIn gives the time until the earliest due row not in flight', async () => {
      const { delivery: leased } = await oneDelivery();
      await claim();
      h.clock.advance(1_000);
      const { delivery: waiting } = await oneDelivery();
      await h.db.query('UPDATE deliveries SET next_attempt_at = $2 WHERE id = $1', [waiting, new Date(h.clock.now().getTime() + 5_000)]);
      assert.equal(await nextDueIn(h.db, h.clock.now()), 5_000);
      await finish([leased, waiting]);
    });

    test('reapAllLeases ends every lease, as a claim ends those that ran out', async () => {
      const { delivery: one } = await oneDelivery();
      const { delivery: two } = await oneDelivery();
      assert.equal((await claim()).length, 2);
      assert.equal(await reapAllLeases(h.db, h.clock.now()), 2);
      for (const id of [one, two]) {
        const r = await row(id);
        assert.equal(r.lease_until, null);
        assert.equal(r.lost_attempts, 1);
        assert.equal(r.next_attempt_at.getTime(), h.clock.now().getTime() + 30_000);
      }
      h.clock.advance(30_000);
      const again = await claim();
      assert.deepEqual(again.map((c) => c.id).sort(), [one, two].sort());
      await finish([one, two]);
    });
  });
}
