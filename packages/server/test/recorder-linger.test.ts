import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ENGINES } from './helpers/engines.ts';
import { createTestHerald, type TestHerald } from './helpers/herald.ts';
import { startReceiver, type Receiver } from './helpers/receiver.ts';
import { createRecorder, type Finished } from '../src/dispatcher/record.ts';
import { claimDeliveries, type ClaimedDelivery } from '../src/storage/queries/claim-deliveries.ts';

// A linger of a minute: any test below that waited for it would hit its own timeout instead.
const MINUTE = 60_000;

for (const engine of ENGINES) {
  describe(`the recorder's linger [${engine}]`, () => {
    let h: TestHerald;
    let receiver: Receiver;

    before(async () => {
      h = await createTestHerald(engine, { dispatcher: { recordLingerMs: MINUTE } });
      receiver = await startReceiver();
      await h.api('POST', '/v1/endpoints', { url: receiver.url, event_types: ['shipment.created'] });
    });
    after(async () => {
      await h.close();
      await receiver.close();
    });

    async function claim(n: number): Promise<ClaimedDelivery[]> {
      await h.api('POST', '/v1/events/batch', { events: Array.from({ length: n }, (_, i) => ({ type: 'shipment.created', data: { id: i } })) });
      const now = h.clock.now();
      return claimDeliveries(h.db, { now, limit: n, scan: 4 * n, leaseUntil: new Date(now.getTime() + MINUTE), maxAttempts: 7, endpointCap: n, inFlight: new Map() });
    }
    const succeeded = (c: ClaimedDelivery): Finished => ({
      endpointId: c.endpoint_id,
      attempt: null,
      update: { id: c.id, leaseToken: c.lease_token, state: 'succeeded', nextAttemptAt: h.clock.now(), lastStatus: 204, lastError: null },
    });
    async function states(ids: string[]): Promise<string[]> {
      const { rows } = await h.db.query<{ state: string }>(`SELECT state FROM deliveries WHERE id = ANY ($1::uuid[]) ORDER BY state`, [ids]);
      return [...new Set(rows.map((r) => r.state))];
    }

    test('a small batch waits for company; idle() writes it at once', { timeout: 20_000 }, async () => {
      const recorder = createRecorder({ db: h.db, disableAfter: 20, now: h.clock.now, lingerMs: MINUTE });
      const claims = await claim(3);
      assert.equal(claims.length, 3);
      const written = claims.map((c) => recorder.push(succeeded(c)));
      // Several turns of the event loop later the batch is still lingering.
      for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
      assert.deepEqual(await states(claims.map((c) => c.id)), ['pending']);
      await recorder.idle();
      await Promise.all(written);
      assert.deepEqual(await states(claims.map((c) => c.id)), ['succeeded']);
    });

    test('64 results are written without lingering', { timeout: 20_000 }, async () => {
      const recorder = createRecorder({ db: h.db, disableAfter: 20, now: h.clock.now, lingerMs: MINUTE });
      const claims = await claim(64);
      assert.equal(claims.length, 64);
      const written = claims.map((c) => recorder.push(succeeded(c)));
      await Promise.all(written);
      assert.deepEqual(await states(claims.map((c) => c.id)), ['succeeded']);
    });

    test("the dispatcher's tick() does not wait for the linger", { timeout: 20_000 }, async () => {
      await h.api('POST', '/v1/events', { type: 'shipment.created', data: { id: 1000 } });
      const report = await h.dispatcher.tick();
      assert.equal(report.succeeded, 1);
      const { rows } = await h.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM attempts WHERE outcome = 'succeeded'`);
      assert.equal(rows[0]!.n, 1);
    });
  });
}
