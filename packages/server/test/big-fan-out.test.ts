import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createAgent } from '../src/outbound/agent.ts';
import { sendAttempt, type Send } from '../src/outbound/send.ts';
import { claimDeliveries } from '../src/storage/queries/claim-deliveries.ts';
import { ENGINES } from './helpers/engines.ts';
import { createTestDispatcher, createTestHerald, TEST_ADDRESSES, testDispatcherConfig, type TestHerald } from './helpers/herald.ts';
import { startReceiver, type Receiver } from './helpers/receiver.ts';
import { TLS } from './helpers/tls.ts';

const ENDPOINTS = 40;

for (const engine of ENGINES) {
  describe(`a large event to many endpoints: one copy of its body, and the event loop keeps turning [${engine}]`, () => {
    let h: TestHerald;
    let receiver: Receiver;
    before(async () => {
      h = await createTestHerald(engine);
      receiver = await startReceiver();
      receiver.respond({ hang: true });
    });
    after(async () => {
      await h.close();
      await receiver.close();
    });

    /** A new account with ENDPOINTS endpoints at the receiver, and one event of about `bytes` to all of them. */
    async function fanOut(bytes: number): Promise<{ accountId: string; eventId: string; body: Buffer }> {
      const { accountId, apiKey } = await h.newAccount('Big Fan-out');
      for (let i = 0; i < ENDPOINTS; i++) {
        const res = await h.api('POST', '/v1/endpoints', { url: `${receiver.url}/e${i}`, event_types: ['shipment.created'] }, apiKey);
        assert.equal(res.status, 201);
      }
      const res = await h.api('POST', '/v1/events', { type: 'shipment.created', data: { id: 1, notes: 'x'.repeat(bytes) } }, apiKey);
      assert.equal(res.status, 202, JSON.stringify(res.json));
      const { rows } = await h.db.query<{ body: Buffer }>('SELECT body FROM events WHERE account_id = $1 AND id = $2', [accountId, res.json.id]);
      return { accountId, eventId: res.json.id, body: Buffer.from(rows[0]!.body) };
    }

    test('a claim of every delivery of one event holds its body once, shared by all of them', async () => {
      const { body } = await fanOut(256 * 1024);
      const now = h.clock.now();
      const claims = await claimDeliveries(h.db, { now, limit: 100, leaseMs: 60_000, endpointCap: 100, originCap: 100 });
      assert.equal(claims.length, ENDPOINTS);
      const bodies = new Set(claims.map((c) => c.body));
      assert.equal(bodies.size, 1, 'one Buffer for the event, not one per delivery');
      assert.ok(claims[0]!.body.equals(body), 'and it is the event as stored');
      // The claim's rows themselves carry it once: the wire holds one copy too.
      await h.db.query(`DELETE FROM in_flight WHERE delivery_id = ANY ($1::uuid[])`, [claims.map((c) => c.id)]);
      const { rows } = await h.db.query<{ bodies: number; rows: number }>(
        `SELECT count(body)::int AS bodies, count(*)::int AS rows FROM herald_claim($1, 100, 60000, 100, 100)`,
        [now],
      );
      assert.deepEqual(rows[0], { bodies: 1, rows: ENDPOINTS });
    });

    test('signing and sending 40 MiB of one fan-out lets the event loop turn between slices', async () => {
      const { accountId } = await fanOut(1000 * 1024);
      // Only this account's deliveries are due: the others' were claimed above or belong to no endpoint of the receiver.
      await h.db.query(`UPDATE deliveries SET state = 'succeeded' WHERE account_id <> $1`, [accountId]);
      // And the leases the claims above took count against nobody's caps (the origin's included).
      await h.db.query('DELETE FROM in_flight');
      // Every delivery sent is counted: the count says how far the launch loop got.
      let reads = 0;
      const agent = createAgent({ connections: 64, addresses: TEST_ADDRESSES, timeoutMs: 10_000, connect: { ca: TLS.ca } });
      const send: Send = (req) => {
        reads += 1;
        return sendAttempt(agent, req);
      };
      const dispatcher = createTestDispatcher(h, testDispatcherConfig({ concurrency: 100, endpointConcurrency: 8 }), { send });
      const seen: number[] = [reads];
      let sampling = true;
      const sample = () => {
        seen.push(reads);
        if (sampling) setImmediate(sample);
      };
      setImmediate(sample);
      const tick = dispatcher.tick();
      // Drive the loop until every delivery is launched (the receiver answers none of them).
      for (let turns = 0; reads < ENDPOINTS; turns++) {
        assert.ok(turns < 100_000, `only ${reads} of ${ENDPOINTS} deliveries were sent`);
        await new Promise((r) => setImmediate(r));
      }
      sampling = false;
      seen.push(reads);
      await dispatcher.stop(0);
      await tick;
      await agent.destroy();
      const steps = seen.slice(1).map((n, i) => n - seen[i]!);
      // A slice ends once it reaches 8 MiB: 9 of these bodies.
      // Without slices all 40 went out in one turn.
      assert.ok(Math.max(...steps) <= 12, `launches between two turns of the event loop: ${steps.filter((s) => s > 0).join(', ')}`);
    });
  });
}
