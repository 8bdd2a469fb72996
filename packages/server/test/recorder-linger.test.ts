import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ENGINES } from './helpers/engines.ts';
import { createTestHerald, type TestHerald } from './helpers/herald.ts';
import { startReceiver, type Receiver } from './helpers/receiver.ts';
import { createRecorder, type Finished } from '../src/dispatcher/record.ts';
import { claimDeliveries, type ClaimedDelivery } from '../src/storage/queries/claim-deliveries.ts';
import type { Db } from '../src/storage/db.ts';

/** The same database, counting the statements and transactions sent through it (sent, not finished: no race with the round trip). */
function counting(db: Db): { db: Db; sent: () => number } {
  let n = 0;
  const wrapped = new Proxy(db, {
    get(target, key) {
      if (key === 'query') {
        return (...args: Parameters<Db['query']>) => {
          n += 1;
          return target.query(...args);
        };
      }
      // A batch is recorded in one transaction: it counts as one write.
      if (key === 'transaction') {
        return (fn: Parameters<Db['transaction']>[0]) => {
          n += 1;
          return target.transaction(fn);
        };
      }
      const value = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { db: wrapped, sent: () => n };
}
const turns = async (n: number) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

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
      return claimDeliveries(h.db, { now, limit: n, leaseMs: MINUTE, endpointCap: n, originCap: n });
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
      const counted = counting(h.db);
      const recorder = createRecorder({ db: counted.db, disableAfter: 20, now: h.clock.now, lingerMs: MINUTE });
      const claims = await claim(3);
      assert.equal(claims.length, 3);
      const written = claims.map((c) => recorder.push(succeeded(c)));
      // Without the linger the write would be sent on the next turn of the event loop.
      await turns(5);
      assert.equal(counted.sent(), 0, 'nothing sent while the batch lingers');
      await recorder.idle();
      await Promise.all(written);
      assert.equal(counted.sent(), 1, 'one write for the batch');
      assert.deepEqual(await states(claims.map((c) => c.id)), ['succeeded']);
    });

    test('63 results wait; the 64th has the batch written at once', { timeout: 20_000 }, async () => {
      const counted = counting(h.db);
      const recorder = createRecorder({ db: counted.db, disableAfter: 20, now: h.clock.now, lingerMs: MINUTE });
      const claims = await claim(64);
      assert.equal(claims.length, 64);
      const written = claims.slice(0, 63).map((c) => recorder.push(succeeded(c)));
      await turns(5);
      assert.equal(counted.sent(), 0, '63 results still linger');
      written.push(recorder.push(succeeded(claims[63]!)));
      await Promise.all(written);
      assert.equal(counted.sent(), 1);
      assert.deepEqual(await states(claims.map((c) => c.id)), ['succeeded']);
    });

    test("the dispatcher's tick() does not wait for the linger", { timeout: 20_000 }, async () => {
      await h.api('POST', '/v1/events', { type: 'shipment.created', data: { id: 1000 } });
      const report = await h.dispatcher.tick();
      assert.equal(report.succeeded, 1);
      const { rows } = await h.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM attempts WHERE outcome = 'succeeded'`);
      assert.equal(rows[0]!.n, 1);
    });

    test('stop() writes the results without waiting for the linger', { timeout: 20_000 }, async () => {
      await h.dispatcher.start();
      await h.api('POST', '/v1/events', { type: 'shipment.created', data: { id: 2000 } });
      await receiver.received(2);
      await h.dispatcher.stop();
      const { rows } = await h.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM attempts WHERE outcome = 'succeeded'`);
      assert.equal(rows[0]!.n, 2);
    });
  });
}
