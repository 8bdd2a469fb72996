import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { Db } from '../src/storage/db.ts';
import { claimDeliveries } from '../src/storage/queries/claim-deliveries.ts';
import { deleteEndpoint } from '../src/storage/queries/endpoints.ts';
import { insertEventsWithDeliveries } from '../src/storage/queries/events.ts';
import { recordResults } from '../src/storage/queries/record-results.ts';
import { ENGINES } from './helpers/engines.ts';
import { alarmData, createTestHerald, newEvent, type TestHerald } from './helpers/herald.ts';
import { startReceiver, type Receiver } from './helpers/receiver.ts';

// Deliveries and attempts carry no foreign keys (docs/decisions/0008): an
// endpoint's delete removes them itself, and the statements that write them
// take the locks a foreign key would have taken.

for (const engine of ENGINES) {
  describe(`deleting an endpoint takes its deliveries and attempt log with it [${engine}]`, () => {
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

    const countsOf = async (endpointId: string) => {
      const { rows } = await h.db.query<{ deliveries: number; attempts: number }>(
        `SELECT (SELECT count(*) FROM deliveries WHERE endpoint_id = $1)::int AS deliveries,
                (SELECT count(*) FROM attempts WHERE endpoint_id = $1)::int AS attempts`,
        [endpointId],
      );
      return rows[0]!;
    };

    test('its delivered and pending deliveries and its attempts go; the other endpoint keeps all of its own', async () => {
      const create = async (path: string) =>
        (await h.api('POST', '/v1/endpoints', { url: `${receiver.url}/${path}`, event_types: ['alarm.created'] })).json.id as string;
      const gone = await create('gone');
      const kept = await create('kept');
      for (let i = 0; i < 3; i++) assert.equal((await h.api('POST', '/v1/events', { type: 'alarm.created', data: alarmData() })).status, 202);
      await h.drain();
      // One more for each, not sent yet: a pending delivery goes too.
      await h.api('POST', '/v1/events', { type: 'alarm.created', data: alarmData() });
      assert.deepEqual(await countsOf(gone), { deliveries: 4, attempts: 3 });
      assert.deepEqual(await countsOf(kept), { deliveries: 4, attempts: 3 });

      assert.equal((await h.api('DELETE', `/v1/endpoints/${gone}`)).status, 204);
      assert.deepEqual(await countsOf(gone), { deliveries: 0, attempts: 0 });
      assert.deepEqual(await countsOf(kept), { deliveries: 4, attempts: 3 });

      // The dispatcher finds only the kept endpoint's pending delivery.
      const before = receiver.requests.length;
      const report = await h.drain();
      assert.equal(report.succeeded, 1);
      assert.deepEqual(receiver.requests.slice(before).map((r) => r.path), [`${new URL(receiver.url).pathname}/kept`]);
    });

    test('an unknown endpoint answers 404 and deletes nothing', async () => {
      const res = await h.api('DELETE', `/v1/endpoints/${randomUUID()}`);
      assert.equal(res.status, 404);
      assert.equal(res.json.code, 'not_found');
    });
  });
}

// Two connections at once: only PostgreSQL has them (PGlite runs one
// statement at a time, so these interleavings cannot happen there).
if (ENGINES.includes('postgres')) {
  describe('an endpoint deleted while a publish or a recorder writes for it is left with nothing [postgres]', () => {
    let h: TestHerald;
    /** Plays the other side: a delete in steps, or a recorder's transaction. */
    let other: pg.Client;
    /** Looks at who waits for a lock, outside any transaction. */
    let watcher: pg.Client;

    before(async () => {
      h = await createTestHerald('postgres');
      other = new pg.Client({ connectionString: h.db.url });
      watcher = new pg.Client({ connectionString: h.db.url });
      await Promise.all([other.connect(), watcher.connect()]);
    });
    after(async () => {
      await Promise.all([other.end(), watcher.end()]);
      await h.close();
    });

    const endpoint = async () =>
      (await h.api('POST', '/v1/endpoints', { url: `https://${randomUUID()}.example.com/hook`, event_types: ['alarm.created'] })).json.id as string;

    const alarm = () => newEvent({ accountId: h.accountId, type: 'alarm.created', data: alarmData(), createdAt: h.clock.now() });

    /**
     * Resolves once a statement of this database waits for a row lock, or
     * once `work` settles without waiting (then the test's checks fail).
     */
    async function waitingOrDone(work: Promise<unknown>): Promise<void> {
      let settled = false;
      void work.finally(() => (settled = true)).catch(() => {});
      for (;;) {
        const { rows } = await watcher.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`);
        if (rows.length > 0 || settled) return;
        await new Promise((r) => setImmediate(r));
      }
    }

    /**
     * The delete's three statements, as deleteEndpoint runs them, with
     * `between` run after the second, before the commit: the endpoint and
     * its deliveries are gone for the deleting transaction, not yet for others.
     */
    async function deleteInSteps(endpointId: string, between: () => Promise<void>): Promise<void> {
      await other.query('BEGIN');
      await other.query('DELETE FROM endpoints WHERE id = $1', [endpointId]);
      await other.query('DELETE FROM deliveries WHERE endpoint_id = $1', [endpointId]);
      await between();
      await other.query('DELETE FROM attempts WHERE endpoint_id = $1', [endpointId]);
      await other.query('COMMIT');
    }

    test('a publish that fans out meanwhile waits, then gives the deleted endpoint no delivery', async () => {
      const gone = await endpoint();
      const kept = await endpoint();
      const event = alarm();
      let publish: Promise<unknown> | undefined;
      await deleteInSteps(gone, async () => {
        publish = insertEventsWithDeliveries(h.db, [event], h.clock.now());
        await waitingOrDone(publish);
      });
      await publish;
      const { rows } = await h.db.query<{ endpoint_id: string }>('SELECT endpoint_id FROM deliveries WHERE event_id = $1', [event.id]);
      assert.deepEqual(rows.map((r) => r.endpoint_id), [kept]);
    });

    /**
     * Publishes an event to the endpoint, claims its delivery, and makes its
     * successful result. With `lostLease`, another worker has claimed the
     * delivery since: the recorder does not update it and logs the attempt
     * through its lookup of lost rows instead.
     */
    async function sentTo(endpointId: string, lostLease: boolean): Promise<Parameters<typeof recordResults>[1]> {
      const event = alarm();
      await insertEventsWithDeliveries(h.db, [event], h.clock.now());
      const now = h.clock.now();
      const claim = (await claimDeliveries(h.db, { now, limit: 100, leaseMs: 60_000, endpointCap: 100, originCap: 100 })).find((c) => c.endpoint_id === endpointId);
      assert.ok(claim, 'the delivery to the endpoint is claimed');
      if (lostLease) await h.db.query('UPDATE in_flight SET lease_token = lease_token + 1000 WHERE delivery_id = $1', [claim.id]);
      const attempt = {
        id: randomUUID(),
        accountId: h.accountId,
        endpointId,
        deliveryId: claim.id,
        eventId: event.id,
        eventType: 'alarm.created',
        attemptNumber: 1,
        isTest: false,
        startedAt: now,
        durationMs: 5,
        statusCode: 204,
        outcome: 'succeeded' as const,
        error: null,
        url: claim.url,
        signature: 'v1=00',
        responseExcerpt: null,
        testBody: null,
      };
      const result = { deliveryId: claim.id, leaseToken: claim.lease_token, endpointId, outcome: 'succeeded' as const, retryInMs: null, status: 204, error: null, throttle: null, attempt };
      return { results: [result], now, disableAfter: 20, endpointCap: 100 };
    }

    const leftOf = async (endpointId: string) =>
      (
        await h.db.query<{ what: string }>(
          `SELECT 'endpoint' AS what FROM endpoints WHERE id = $1
           UNION ALL SELECT 'delivery' FROM deliveries WHERE endpoint_id = $1
           UNION ALL SELECT 'attempt' FROM attempts WHERE endpoint_id = $1`,
          [endpointId],
        )
      ).rows.map((r) => r.what);

    for (const [lease, lostLease] of [['its lease', false], ['a lost lease', true]] as const) {
      test(`a recorder that logs an attempt meanwhile (${lease}) waits, then logs nothing for the deleted endpoint`, async () => {
        const gone = await endpoint();
        const result = await sentTo(gone, lostLease);
        let recorded: Promise<unknown> | undefined;
        await deleteInSteps(gone, async () => {
          recorded = recordResults(h.db, result);
          await waitingOrDone(recorded);
        });
        await recorded;
        assert.deepEqual(await leftOf(gone), []);
      });

      test(`a delete that comes while a recorder is writing (${lease}) waits for it, then removes what it logged`, async () => {
        const gone = await endpoint();
        const result = await sentTo(gone, lostLease);
        await other.query('BEGIN');
        // The recorder's transaction is the one already open on the other connection.
        const onOther = { query: (text: string, params?: readonly unknown[]) => other.query(text, params as unknown[]), transaction: (fn: (q: unknown) => unknown) => fn(onOther) };
        await recordResults(onOther as unknown as Db, result);
        assert.equal((await other.query('SELECT 1 FROM attempts WHERE endpoint_id = $1', [gone])).rowCount, 1);
        const deleting = deleteEndpoint(h.db, h.accountId, gone);
        await waitingOrDone(deleting);
        await other.query('COMMIT');
        assert.equal(await deleting, true);
        assert.deepEqual(await leftOf(gone), []);
      });
    }

    test('a delete that deadlocks with a recorder holding one of its deliveries starts over, and both finish', async () => {
      const gone = await endpoint();
      const event = alarm();
      await insertEventsWithDeliveries(h.db, [event], h.clock.now());
      const { rows } = await h.db.query<{ id: string }>('SELECT id FROM deliveries WHERE endpoint_id = $1', [gone]);
      // A recorder's transaction has locked the delivery (it logs an attempt of it)…
      await other.query('BEGIN');
      // This side checks for a deadlock only after 10 s, so the delete (1 s,
      // PostgreSQL's default) is always the one that finds it and gives way.
      await other.query(`SET LOCAL deadlock_timeout = '10s'`);
      await other.query('SELECT 1 FROM deliveries WHERE id = $1 FOR KEY SHARE', [rows[0]!.id]);
      const deleting = deleteEndpoint(h.db, h.accountId, gone);
      await waitingOrDone(deleting);
      // …and now needs the endpoint's row, which the waiting delete holds: a
      // deadlock. PostgreSQL fails the delete; it starts over behind the recorder.
      const recorder = other.query('UPDATE endpoints SET failure_streak = failure_streak + 1 WHERE id = $1', [gone]).then(
        () => other.query('COMMIT'),
        async (err) => {
          await other.query('ROLLBACK');
          throw err;
        },
      );
      assert.equal(await deleting, true);
      await recorder;
      assert.deepEqual(await leftOf(gone), []);
    });
  });
}
