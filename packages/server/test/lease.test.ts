import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ENGINES } from './helpers/engines.ts';
import { createTestHerald, type TestHerald } from './helpers/herald.ts';
import { claimDeliveries, nextDueAt, releaseAllLeases } from '../src/storage/queries/claim-deliveries.ts';
import type { Queryable } from '../src/storage/db.ts';

const LEASE_MS = 60_000;

for (const engine of ENGINES) {
  describe(`the lease: a claim writes no index entry, and passes over rows still leased [${engine}]`, () => {
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

    const claim = (db: Queryable = h.db) => {
      const now = h.clock.now();
      return claimDeliveries(db, {
        now,
        limit: 100,
        scan: 400,
        leaseUntil: new Date(now.getTime() + LEASE_MS),
        maxAttempts: 7,
        endpointCap: 100,
        inFlight: new Map(),
      });
    };

    const row = async (id: string) =>
      (
        await h.db.query<{ next_attempt_at: Date; lease_until: Date | null; lease_token: string | null; attempts: number }>(
          'SELECT next_attempt_at, lease_until, lease_token, attempts FROM deliveries WHERE id = $1',
          [id],
        )
      ).rows[0]!;

    test('a claim sets the lease end and keeps next_attempt_at; the update is HOT (no index entry)', async () => {
      const { delivery, event, apiKey } = await oneDelivery();
      const before = await row(delivery);
      const hot = await h.db.transaction(async (tx) => {
        const claimed = await claim(tx);
        assert.deepEqual(
          claimed.map((c) => c.id),
          [delivery],
        );
        // This transaction's own counts: the claim's update of the row, and whether it was heap-only.
        const { rows } = await tx.query<{ upd: string; hot: string }>(
          `SELECT n_tup_upd::text AS upd, n_tup_hot_upd::text AS hot FROM pg_stat_xact_user_tables WHERE relname = 'deliveries'`,
        );
        return rows[0]!;
      });
      assert.deepEqual(hot, { upd: '1', hot: '1' }, 'one update, written without index entries');

      const after = await row(delivery);
      assert.equal(after.next_attempt_at.getTime(), before.next_attempt_at.getTime(), 'next_attempt_at is where it was');
      assert.equal(after.lease_until?.getTime(), h.clock.now().getTime() + LEASE_MS);
      assert.notEqual(after.lease_token, null);
      assert.equal(after.attempts, 1);

      // What users see is unchanged: an in-flight delivery is next due when its lease runs out.
      const shown = (await h.api('GET', `/v1/events/${event}`, undefined, apiKey)).json;
      const d = shown.deliveries.find((x: { id: string }) => x.id === delivery);
      assert.equal(d.state, 'pending');
      assert.equal(d.next_attempt_at, new Date(h.clock.now().getTime() + LEASE_MS).toISOString());
      await h.db.query(`UPDATE deliveries SET state = 'succeeded', lease_token = NULL, lease_until = NULL WHERE id = $1`, [delivery]);
    });

    test('a leased row is passed over until its lease runs out, then claimed again with a new token and the next attempt', async () => {
      const { delivery } = await oneDelivery();
      const [first] = await claim();
      assert.equal(first?.id, delivery);
      assert.equal(first!.attempts, 1);

      h.clock.advance(LEASE_MS - 1);
      assert.deepEqual(await claim(), [], 'the lease still runs');
      // An idle worker's wake-up passes over it too: nothing else is due.
      assert.equal(await nextDueAt(h.db, h.clock.now()), undefined);

      h.clock.advance(1);
      assert.equal((await nextDueAt(h.db, h.clock.now()))?.getTime(), (await row(delivery)).next_attempt_at.getTime(), 'due since it was claimed');
      const [second] = await claim();
      assert.equal(second?.id, delivery);
      assert.equal(second!.attempts, 2);
      assert.equal(second!.attempts_before, 1);
      assert.notEqual(second!.lease_token, first!.lease_token, 'a new fencing token');
      await h.db.query(`UPDATE deliveries SET state = 'succeeded', lease_token = NULL, lease_until = NULL WHERE id = $1`, [delivery]);
    });

    test("past a full head, the claim takes an endpoint's due row behind its leased ones", async () => {
      // Two accounts, one endpoint each; E1's rows come due first, then E2's, a millisecond apart.
      const e1 = await oneDelivery();
      const more = async (d: { apiKey: string; endpoint: string }, n: number) => {
        for (let i = 0; i < n; i++) {
          h.clock.advance(1);
          await h.api('POST', '/v1/events', { type: 'shipment.created', data: { id: `${d.endpoint}-${i}` } }, d.apiKey);
        }
      };
      await more(e1, 2);
      h.clock.advance(1);
      const e2 = await oneDelivery();
      await more(e2, 2);
      const rowsOf = async (endpoint: string) =>
        (await h.db.query<{ id: string }>(`SELECT id FROM deliveries WHERE endpoint_id = $1 ORDER BY next_attempt_at`, [endpoint])).rows.map((r) => r.id);
      const [, , third] = await rowsOf(e2.endpoint);
      // E1 is at its cap of 2 in this worker: the claim takes E2's two oldest and leases them.
      const claimWith = (limit: number, scan: number) => {
        const now = h.clock.now();
        return claimDeliveries(h.db, {
          now,
          limit,
          scan,
          leaseUntil: new Date(now.getTime() + LEASE_MS),
          maxAttempts: 7,
          endpointCap: 2,
          inFlight: new Map([[e1.endpoint, 2]]),
        });
      };
      const first = await claimWith(2, 8);
      assert.deepEqual(
        first.map((c) => c.id),
        (await rowsOf(e2.endpoint)).slice(0, 2),
      );
      // A head of two holds only E1's rows (capped), so the claim looks behind it, endpoint by
      // endpoint. E2's first two rows are leased: only its third may be taken, and it is.
      const second = await claimWith(2, 2);
      assert.deepEqual(
        second.map((c) => c.id),
        [third],
      );
      assert.deepEqual(await claimWith(2, 2), [], 'nothing of E2 is left that is not leased');
      await h.db.query(`UPDATE deliveries SET state = 'succeeded', lease_token = NULL, lease_until = NULL WHERE endpoint_id = ANY ($1::uuid[])`, [
        [e1.endpoint, e2.endpoint],
      ]);
    });

    test('nextDueAt gives the earliest due time of rows not leased', async () => {
      const { delivery: leased } = await oneDelivery();
      await claim();
      h.clock.advance(1_000);
      const { delivery: waiting } = await oneDelivery();
      const retryAt = new Date(h.clock.now().getTime() + 5_000);
      await h.db.query('UPDATE deliveries SET next_attempt_at = $2 WHERE id = $1', [waiting, retryAt]);
      assert.equal((await nextDueAt(h.db, h.clock.now()))?.getTime(), retryAt.getTime());
      await h.db.query(`UPDATE deliveries SET state = 'succeeded', lease_token = NULL, lease_until = NULL WHERE id = ANY ($1::uuid[])`, [[leased, waiting]]);
    });

    test('releaseAllLeases ends every lease, those taken before migration 008 (next_attempt_at at the lease end) too', async () => {
      const { delivery: now } = await oneDelivery();
      await claim();
      const { delivery: older } = await oneDelivery();
      // A lease as claims wrote it before: next_attempt_at moved to the lease's end, no lease_until.
      await h.db.query(`UPDATE deliveries SET lease_token = 1, next_attempt_at = $2 WHERE id = $1`, [older, new Date(h.clock.now().getTime() + LEASE_MS)]);
      assert.deepEqual(await claim(), [], 'both are leased');

      assert.equal(await releaseAllLeases(h.db, h.clock.now()), 2);
      for (const id of [now, older]) {
        const r = await row(id);
        assert.equal(r.lease_until, null);
        assert.equal(r.lease_token, null);
        assert.ok(r.next_attempt_at.getTime() <= h.clock.now().getTime(), 'due now');
      }
      const again = await claim();
      assert.deepEqual(again.map((c) => c.id).sort(), [now, older].sort());
      await h.db.query(`UPDATE deliveries SET state = 'succeeded', lease_token = NULL, lease_until = NULL WHERE id = ANY ($1::uuid[])`, [[now, older]]);
    });
  });
}
