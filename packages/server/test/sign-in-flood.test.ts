import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createUser } from '../src/services/users.ts';
import { ENGINES } from './helpers/engines.ts';
import { createTestHerald, type TestHerald } from './helpers/herald.ts';
import { startReceiver, type Receiver } from './helpers/receiver.ts';

/**
 * Password hashing (scrypt) and the delivery agent's DNS lookups share
 * libuv's thread pool (4 threads). A flood of wrong sign-ins must not queue
 * enough scrypt work there to make deliveries to a host name miss their
 * deadline: hashing has a small concurrency of its own and refuses past a
 * short queue.
 *
 * The receiver is reached as `localhost`, through the real `dns.lookup`.
 * The sign-ins come from distinct addresses, so the sign-in limiter lets
 * every one of them through to the password check.
 */

const SIGN_INS = 150;
const DELIVERIES = 15;
const DEADLINE_MS = 3_000;

for (const engine of ENGINES) {
  describe(`a flood of wrong sign-ins [${engine}]`, () => {
    let h: TestHerald;
    let receiver: Receiver;

    before(async () => {
      // endpointConcurrency 8: up to 8 new connections to the receiver, each with its own lookup.
      h = await createTestHerald(engine, { dispatcher: { requestTimeoutMs: DEADLINE_MS, endpointConcurrency: 8 } });
      receiver = await startReceiver();
      await createUser(h.deps.db, h.deps.passwords, h.accountId, { email: 'ada@acme.example', name: 'Ada', password: 'correct horse battery staple' });
    });
    after(async () => {
      await h.close();
      await receiver.close();
    });

    test('does not make deliveries to a host name time out', async () => {
      assert.match(receiver.url, /^https:\/\/localhost:/);
      assert.equal((await h.api('POST', '/v1/endpoints', { url: receiver.url, event_types: ['shipment.created'] })).status, 201);
      for (let i = 0; i < DELIVERIES; i++) await h.api('POST', '/v1/events', { type: 'shipment.created', data: { id: i } });

      let firstAnswer!: () => void;
      const answered = new Promise<void>((resolve) => (firstAnswer = resolve));
      const signIns = Array.from({ length: SIGN_INS }, (_, i) =>
        h
          .call('POST', '/v1/session', { body: { email: 'ada@acme.example', password: `wrong guess ${i}` }, remoteAddress: `198.51.${i >> 8}.${i & 255}` })
          .then((res) => {
            firstAnswer();
            return res.status;
          }),
      );
      // Once one sign-in has an answer, the others have reached the password check.
      await answered;
      // One tick sends as many as the endpoint's cap (8); the next ones send the rest.
      let delivered = 0;
      for (let report = await h.dispatcher.tick(); report.claimed > 0; report = await h.dispatcher.tick()) delivered += report.succeeded;
      const statuses = await Promise.all(signIns);

      const timedOut = await h.db.query<{ n: number }>("SELECT count(*)::int AS n FROM attempts WHERE error LIKE 'timed out%'");
      assert.equal(timedOut.rows[0]!.n, 0, 'no delivery timed out');
      assert.equal(delivered, DELIVERIES);
      assert.ok(statuses.every((s) => s === 401 || s === 503), `statuses: ${[...new Set(statuses)].join(', ')}`);
      assert.ok(statuses.includes(401), 'some passwords were checked');
      assert.ok(h.deps.passwords.peak <= 2, `at most 2 hashes ran at once, not ${h.deps.passwords.peak}`);
    });
  });
}
