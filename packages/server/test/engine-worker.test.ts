import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { systemClock } from '../src/core/clock.ts';
import { encryptSecret } from '../src/core/secrets.ts';
import { createDispatcher, type Dispatcher, type DispatcherParts } from '../src/dispatcher/dispatcher.ts';
import { databaseParts } from '../src/dispatcher/parts.ts';
import { createAgent } from '../src/outbound/agent.ts';
import { sendAttempt } from '../src/outbound/send.ts';
import { claimDeliveries } from '../src/storage/queries/claim-deliveries.ts';
import { ENGINES } from './helpers/engines.ts';
import { createTestHerald, TEST_ADDRESSES, TEST_KEY, testDispatcherConfig, type TestHerald } from './helpers/herald.ts';
import { startReceiver, type Receiver } from './helpers/receiver.ts';
import { TLS } from './helpers/tls.ts';
import type { DispatcherConfig } from '../src/config.ts';
import type { Agent } from 'undici';

/** A worker of its own on the test Herald's database, with its own agent; `parts` replaces any of its parts. */
function worker(h: TestHerald, config: DispatcherConfig, agent: Agent, parts: Partial<DispatcherParts> = {}): Dispatcher {
  return createDispatcher({
    ...databaseParts(h.db, config),
    config,
    clock: h.clock.now,
    encryptionKey: TEST_KEY,
    send: (req) => sendAttempt(agent, req),
    random: () => 0.5,
    ...parts,
  });
}

const newAgent = (config: DispatcherConfig) => createAgent({ connections: config.originConcurrency, addresses: TEST_ADDRESSES, timeoutMs: config.requestTimeoutMs, connect: { ca: TLS.ca } });

/** Endpoints at paths of one receiver (one origin), each subscribed to shipment.created. */
async function endpointsAt(h: TestHerald, receiver: Receiver, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push((await h.api('POST', '/v1/endpoints', { url: `${receiver.url}/e${i}`, event_types: ['shipment.created'] })).json.id);
  return ids;
}

async function publish(h: TestHerald, n: number, tag: string): Promise<void> {
  const events = Array.from({ length: n }, (_, i) => ({ type: 'shipment.created', data: { id: `${tag}-${i}` } }));
  assert.equal((await h.api('POST', '/v1/events/batch', { events })).status, 202);
}

const pairs = (r: Receiver) => new Set(r.requests.map((q) => `${q.path} ${String(q.headers['x-service-event-id'])}`));

for (const engine of ENGINES) {
  describe(`the worker [${engine}]`, () => {
    let h: TestHerald;
    let receiver: Receiver;
    before(async () => {
      h = await createTestHerald(engine);
      receiver = await startReceiver();
    });
    after(async () => {
      await h.close();
      await receiver.close();
    });

    test('two workers, many endpoints behind one slow origin, a short lease: each delivery is received once, and none after its lease', { timeout: 60_000 }, async () => {
      await h.db.query(`UPDATE endpoints SET event_types = '{alarm.resolved}'`);
      receiver.requests.length = 0;
      // Real time: the leases run out on the database's clock, as in production.
      // A request that misses its 500 ms deadline (a loaded machine) is a failed
      // attempt, retried 200 ms later: a second request for that delivery is
      // then right, and allowed below; any other is a duplicate.
      const base = testDispatcherConfig();
      const config = testDispatcherConfig({ concurrency: 100, endpointConcurrency: 4, originConcurrency: 4, leaseMs: 2_000, requestTimeoutMs: 500, pollMs: 50, retry: { ...base.retry, baseMs: 200 } });
      const receivedAt = new Map<string, number>();
      receiver.respond((r) => {
        receivedAt.set(String(r.headers['x-service-delivery-id']), Date.now());
        return { status: 204, delayMs: 100 };
      });
      // When each delivery was claimed: its lease cannot have started before.
      const claimedAt = new Map<string, number[]>();
      const claim: DispatcherParts['claim'] = async (p) => {
        const at = Date.now();
        const got = await claimDeliveries(h.db, p);
        for (const d of got) claimedAt.set(d.id, [...(claimedAt.get(d.id) ?? []), at]);
        return got;
      };
      await endpointsAt(h, receiver, 20);
      await publish(h, 5, 'shared');
      const agents = [newAgent(config), newAgent(config)];
      const workers = agents.map((agent) => worker(h, config, agent, { clock: systemClock, claim }));
      try {
        for (const w of workers) await w.start();
        await receiver.until((rs) => pairs(receiver).size >= 100 && rs.length >= 100);
      } finally {
        for (const w of workers) await w.stop(5_000);
        for (const a of agents) await a.destroy();
      }
      const { rows } = await h.db.query<{ id: string; delivery_id: string; outcome: string }>(`SELECT id, delivery_id, outcome FROM attempts WHERE NOT is_test`);
      const deliveryOf = new Map(rows.map((r) => [r.id, r.delivery_id]));
      // Every request received is an attempt its worker sent and recorded, and
      // a delivery is received more than once only after an attempt of it failed.
      const received = new Map<string, number>();
      for (const attemptId of receivedAt.keys()) {
        const delivery = deliveryOf.get(attemptId);
        assert.ok(delivery, `request ${attemptId} was received but its attempt was never recorded`);
        received.set(delivery, (received.get(delivery) ?? 0) + 1);
      }
      assert.equal(received.size, 100, 'every delivery received');
      for (const [delivery, n] of received) {
        const failed = rows.filter((r) => r.delivery_id === delivery && r.outcome !== 'succeeded').length;
        assert.ok(n <= 1 + failed, `delivery ${delivery} was received ${n} times after ${failed} failed attempts: a duplicate`);
      }
      for (const [attemptId, at] of receivedAt) {
        const claims = claimedAt.get(deliveryOf.get(attemptId)!)!.filter((c) => c <= at);
        assert.ok(at < claims.at(-1)! + config.leaseMs, `request received ${at - claims.at(-1)!} ms after its claim, past the ${config.leaseMs} ms lease`);
      }
      const states = await h.db.query<{ state: string; n: number }>(`SELECT state, count(*)::int AS n FROM deliveries WHERE state <> 'skipped' GROUP BY state`);
      assert.deepEqual(states.rows, [{ state: 'succeeded', n: 100 }]);
    });

    test('a burst of 300 deliveries to one slow origin: every request is signed when it is sent (timestamp at most 2 s old on arrival)', { timeout: 60_000 }, async () => {
      await h.db.query(`UPDATE endpoints SET event_types = '{alarm.resolved}'`);
      receiver.requests.length = 0;
      const config = testDispatcherConfig({ concurrency: 300, endpointConcurrency: 10, originConcurrency: 10, pollMs: 50 });
      const age: number[] = [];
      receiver.respond((r) => {
        age.push(Date.now() / 1000 - Number(r.headers['x-service-timestamp']));
        return { status: 204, delayMs: 150 };
      });
      await endpointsAt(h, receiver, 30);
      await publish(h, 10, 'burst');
      const agent = newAgent(config);
      const w = worker(h, config, agent, { clock: systemClock });
      try {
        await w.start();
        await receiver.received(300);
      } finally {
        await w.stop(5_000);
        await agent.destroy();
      }
      assert.equal(age.length, 300);
      const oldest = Math.max(...age);
      assert.ok(oldest <= 2, `a request arrived with a timestamp ${oldest.toFixed(1)} s old`);
    });

    test('a result written after its lease ran out is reported as late, not succeeded, and changes nothing', async () => {
      await h.db.query(`UPDATE endpoints SET event_types = '{alarm.resolved}'`);
      receiver.respond({ status: 204 });
      const [endpoint] = await endpointsAt(h, receiver, 1);
      await publish(h, 1, 'late');
      const config = testDispatcherConfig();
      const agent = newAgent(config);
      // While the request is out, the lease runs out and another worker's claim reaps it.
      const w = worker(h, config, agent, {
        send: async (req) => {
          const sent = await sendAttempt(agent, req);
          h.clock.advance(config.leaseMs + 1);
          await claimDeliveries(h.db, { limit: 10, leaseMs: config.leaseMs, endpointCap: 8, originCap: 8, now: h.clock.now() });
          return sent;
        },
      });
      try {
        const report = await w.tick();
        assert.deepEqual([report.claimed, report.late, report.succeeded], [1, 1, 0]);
      } finally {
        await w.stop(1_000);
        await agent.destroy();
      }
      const { rows } = await h.db.query<{ state: string; attempts: number; logged: number }>(
        `SELECT d.state, d.attempts, (SELECT count(*)::int FROM attempts a WHERE a.delivery_id = d.id) AS logged
           FROM deliveries d WHERE d.endpoint_id = $1`,
        [endpoint],
      );
      assert.deepEqual(rows, [{ state: 'pending', attempts: 0, logged: 1 }], 'still pending for the next worker; the request sent is logged');
    });

    test('a signing secret that does not decrypt fails the delivery at once, saying why, instead of leaving it to count as lost', async () => {
      await h.db.query(`UPDATE endpoints SET event_types = '{alarm.resolved}'`);
      receiver.respond({ status: 204 });
      receiver.requests.length = 0;
      const [endpoint] = await endpointsAt(h, receiver, 1);
      // Sealed under another key: it does not decrypt under the worker's.
      await h.db.query(`UPDATE endpoints SET secret_encrypted = $2 WHERE id = $1`, [endpoint, encryptSecret(Buffer.alloc(32, 9), 'whsec_other', endpoint!)]);
      await publish(h, 1, 'undecryptable');
      const config = testDispatcherConfig();
      const agent = newAgent(config);
      const w = worker(h, config, agent);
      try {
        const report = await w.tick();
        assert.deepEqual([report.claimed, report.failed], [1, 1]);
      } finally {
        await w.stop(1_000);
        await agent.destroy();
      }
      assert.equal(receiver.requests.length, 0, 'nothing was sent');
      const { rows } = await h.db.query<{ state: string; last_error: string; lost_attempts: number; in_flight: boolean }>(
        `SELECT state, last_error, lost_attempts, EXISTS (SELECT 1 FROM in_flight f WHERE f.delivery_id = d.id) AS in_flight FROM deliveries d WHERE endpoint_id = $1`,
        [endpoint],
      );
      assert.equal(rows.length, 1);
      assert.deepEqual([rows[0]!.state, rows[0]!.lost_attempts, rows[0]!.in_flight], ['failed', 0, false]);
      assert.match(rows[0]!.last_error, /^Herald could not prepare the request: signing secret: cannot decrypt/);
    });

    test('a claim that fails on the worker but commits on the server is given back once the database answers: sent at once, no loss counted', async () => {
      await h.db.query(`UPDATE endpoints SET event_types = '{alarm.resolved}'`);
      receiver.respond({ status: 204 });
      receiver.requests.length = 0;
      const [endpoint] = await endpointsAt(h, receiver, 1);
      await publish(h, 3, 'unanswered');
      const config = testDispatcherConfig();
      const agent = newAgent(config);
      // The first claim commits, then its answer is lost (a timeout on this side).
      let claims = 0;
      const w = worker(h, config, agent, {
        claim: async (p) => {
          const got = await claimDeliveries(h.db, p);
          if (++claims === 1) throw new Error(`query read timeout (${got.length} deliveries leased all the same)`);
          return got;
        },
      });
      try {
        await assert.rejects(w.tick(), /query read timeout \(3 deliveries/);
        const report = await w.tick();
        assert.deepEqual([report.claimed, report.succeeded], [3, 3], 'claimed again at once, not after the lease');
      } finally {
        await w.stop(1_000);
        await agent.destroy();
      }
      assert.equal(receiver.requests.length, 3);
      const { rows } = await h.db.query<{ state: string; lost_attempts: number; attempts: number; n: number }>(
        `SELECT state, lost_attempts, attempts, count(*)::int AS n FROM deliveries WHERE endpoint_id = $1 GROUP BY 1, 2, 3`,
        [endpoint],
      );
      assert.deepEqual(rows, [{ state: 'succeeded', lost_attempts: 0, attempts: 1, n: 3 }]);
    });

    test('workers killed mid-request are not blamed on the receiver: everything is delivered, the endpoint stays enabled, no attempt is spent', { timeout: 60_000 }, async () => {
      await h.db.query(`UPDATE endpoints SET event_types = '{alarm.resolved}'`);
      receiver.respond({ status: 204, delayMs: 200 });
      const [endpoint] = await endpointsAt(h, receiver, 1);
      await publish(h, 40, 'crash');
      // Leases shorter than the 30 s a lost delivery waits: each kill hits other deliveries.
      const config = testDispatcherConfig({ concurrency: 8, leaseMs: 20_000 });
      const agent = newAgent(config);
      try {
        for (let kill = 0; kill < 3; kill++) {
          const before = receiver.requests.length;
          // A worker that dies: it sends what it claims, and never writes a result.
          const doomed = worker(h, config, agent, { record: () => new Promise(() => {}), listen: undefined });
          await doomed.start();
          await receiver.received(before + 8);
          doomed.pause('killed');
          h.clock.advance(config.leaseMs + 1);
        }
      } finally {
        await agent.destroy();
      }
      await h.drain();
      const { rows } = await h.db.query<{ state: string; attempts: number; n: number }>(
        `SELECT state, attempts, count(*)::int AS n FROM deliveries WHERE endpoint_id = $1 GROUP BY state, attempts`,
        [endpoint],
      );
      assert.deepEqual(rows, [{ state: 'succeeded', attempts: 1, n: 40 }], 'all delivered, each on its one answered attempt');
      const ep = (await h.api('GET', `/v1/endpoints/${endpoint}`)).json;
      assert.deepEqual([ep.state, ep.failure_streak], ['enabled', 0]);
      const lost = await h.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM deliveries WHERE endpoint_id = $1 AND lost_attempts > 0`, [endpoint]);
      // Three kills of 8 in flight each: the deliveries they held were lost, and counted as lost, not as attempts.
      assert.ok(lost.rows[0]!.n >= 8 && lost.rows[0]!.n <= 24, `${lost.rows[0]!.n} deliveries lost`);
    });
  });
}
