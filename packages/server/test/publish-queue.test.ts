import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { ENGINES } from './helpers/engines.ts';
import { createTestHerald, newEvent, type TestHerald } from './helpers/herald.ts';
import { PublishQueue } from '../src/services/publish-queue.ts';
import type { Db } from '../src/storage/db.ts';
import type { NewEvent } from '../src/storage/queries/events.ts';

for (const engine of ENGINES) {
  describe(`single publishes share statements under load (group commit) [${engine}]`, () => {
    let h: TestHerald;
    let other: { accountId: string; apiKey: string };
    const endpoints: Record<string, string> = {};
    /** The test database, counting the publish statements sent through it. */
    let counting: Db;
    let statements: number[];

    before(async () => {
      h = await createTestHerald(engine);
      other = await h.newAccount('Other Account');
      endpoints.mine = (await h.api('POST', '/v1/endpoints', { url: 'https://mine.example.com/hook', event_types: ['shipment.created'] })).json.id;
      endpoints.theirs = (await h.api('POST', '/v1/endpoints', { url: 'https://theirs.example.com/hook', event_types: ['shipment.created'] }, other.apiKey)).json.id;
      counting = Object.assign(Object.create(h.db) as Db, {
        query: (text: string, params?: readonly unknown[], options?: { name?: string }) => {
          if (text.includes('INSERT INTO events')) statements.push((params![1] as unknown[]).length);
          return h.db.query(text, params, options);
        },
      });
    });
    after(async () => {
      await h.close();
    });

    /** The event loop's next turn: by then the queue has started writing what was added before. */
    const nextTurn = () => new Promise((r) => setImmediate(r));
    /** Adds `first`, lets its statement start, then adds the rest: they wait for it, and go together. */
    async function openerThen(queue: PublishQueue, first: NewEvent, rest: readonly NewEvent[]): Promise<Promise<boolean>[]> {
      const opener = queue.add(first);
      await nextTurn();
      return [opener, ...rest.map((e) => queue.add(e))];
    }

    const event = (accountId: string, data: unknown, id = randomUUID()): NewEvent =>
      newEvent({ accountId, id, type: 'shipment.created', data, createdAt: h.clock.now() });
    const deliveriesOf = async (ids: string[]) =>
      (
        await h.db.query<{ event_id: string; account_id: string; endpoint_id: string }>(
          'SELECT event_id, account_id, endpoint_id FROM deliveries WHERE event_id = ANY ($1::uuid[]) ORDER BY event_id',
          [ids],
        )
      ).rows;

    test('publishes added in one turn of the event loop share a statement', async () => {
      statements = [];
      const queue = new PublishQueue(counting, h.deps.newWork, { inFlight: 1 });
      const events = Array.from({ length: 5 }, (_, i) => event(h.accountId, { id: `gc-turn-${i}` }));
      assert.deepEqual(await Promise.all(events.map((e) => queue.add(e))), Array(5).fill(true));
      assert.deepEqual(statements, [5]);
      assert.equal((await deliveriesOf(events.map((e) => e.id))).length, 5);
    });

    test('a lone publish is written on the next turn; those that arrive while it is written go together, of any account, each to its own endpoints', async () => {
      statements = [];
      const queue = new PublishQueue(counting, h.deps.newWork, { inFlight: 1 });
      const events = Array.from({ length: 10 }, (_, i) => event(i % 2 ? other.accountId : h.accountId, { id: `gc-${i}` }));
      const results = await Promise.all(await openerThen(queue, events[0]!, events.slice(1)));
      assert.deepEqual(results, Array(10).fill(true));
      assert.deepEqual(statements, [1, 9]);
      const rows = await deliveriesOf(events.map((e) => e.id));
      assert.equal(rows.length, 10);
      for (const e of events) {
        const d = rows.find((r) => r.event_id === e.id)!;
        assert.equal(d.account_id, e.accountId);
        assert.equal(d.endpoint_id, e.accountId === h.accountId ? endpoints.mine : endpoints.theirs);
      }
    });

    test('one event that fails its shared statement fails alone: the others are stored and answered', async () => {
      statements = [];
      const queue = new PublishQueue(counting, h.deps.newWork, { inFlight: 1 });
      const first = event(h.accountId, { id: 'gc-first' });
      const good = [event(h.accountId, { id: 'gc-a' }), event(other.accountId, { id: 'gc-b' })];
      const orphan = event(randomUUID(), { id: 'gc-orphan' }); // no such account: a foreign-key violation
      const settled = await Promise.allSettled(await openerThen(queue, first, [good[0]!, orphan, good[1]!]));
      assert.deepEqual(
        settled.map((s) => s.status),
        ['fulfilled', 'fulfilled', 'rejected', 'fulfilled'],
      );
      assert.match(String((settled[2] as PromiseRejectedResult).reason), /foreign key/);
      // The shared statement of three failed, then each was written alone.
      assert.deepEqual(statements.sort(), [1, 1, 1, 1, 3]);
      assert.equal((await deliveriesOf([first.id, ...good.map((e) => e.id)])).length, 3);
      assert.equal((await deliveriesOf([orphan.id])).length, 0);
    });

    test('an error of the connection or the server fails the whole statement at once, with no retries row by row', async () => {
      let failing = true;
      const sent: number[] = [];
      const broken = Object.assign(Object.create(h.db) as Db, {
        query: (text: string, params?: readonly unknown[], options?: { name?: string }) => {
          if (text.includes('INSERT INTO events')) {
            sent.push((params![1] as unknown[]).length);
            if (failing && sent.length > 1) return Promise.reject(Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }));
          }
          return h.db.query(text, params, options);
        },
      });
      const queue = new PublishQueue(broken, h.deps.newWork, { inFlight: 1 });
      const [first, ...rest] = Array.from({ length: 4 }, (_, i) => event(h.accountId, { id: `gc-down-${i}` }));
      const settled = await Promise.allSettled(await openerThen(queue, first!, rest));
      assert.deepEqual(settled.map((s) => s.status), ['fulfilled', 'rejected', 'rejected', 'rejected']);
      assert.deepEqual(sent, [1, 3]);
      failing = false;
    });

    test('a statement takes events up to the byte budget (at least one, however large)', async () => {
      statements = [];
      const queue = new PublishQueue(counting, h.deps.newWork, { inFlight: 1, bytesPerStatement: 1_000 });
      const big = (i: number) => event(h.accountId, { id: `gc-big-${i}`, pad: 'x'.repeat(600) });
      const small = (i: number) => event(h.accountId, { id: `gc-small-${i}` });
      // Envelopes: big about 750 bytes, small about 150.
      const events = [small(0), big(1), small(2), big(3), big(4), small(5), small(6)];
      const results = await Promise.all(await openerThen(queue, events[0]!, events.slice(1)));
      assert.deepEqual(results, Array(7).fill(true));
      // The opener alone; then big 1 + small 2; big 3 alone (with big 4 it would pass 1,000); big 4 + small 5; small 6.
      assert.deepEqual(statements, [1, 2, 1, 2, 1]);
    });

    test('the same id twice in one statement: the first is stored, the second is told it was there before (never both "new")', async () => {
      statements = [];
      const queue = new PublishQueue(counting, h.deps.newWork, { inFlight: 1 });
      const id = randomUUID();
      const a = event(h.accountId, { id: 'gc-same', v: 1 }, id);
      const b = event(h.accountId, { id: 'gc-same', v: 2 }, id);
      const results = await Promise.all(await openerThen(queue, event(h.accountId, { id: 'gc-opener' }), [a, b]));
      assert.deepEqual(statements, [1, 2]);
      assert.deepEqual(results, [true, true, false]);
      const { rows } = await h.db.query<{ request_hash: Buffer }>('SELECT request_hash FROM events WHERE account_id = $1 AND id = $2', [h.accountId, id]);
      assert.ok(rows[0]!.request_hash.equals(a.requestHash), 'the first one in is the one stored');
    });

    test('through the API: concurrent publishes of one id with two bodies give one 202 and one 409; the same body is a replay', async () => {
      const id = randomUUID();
      const [x, y] = await Promise.all([
        h.api('POST', '/v1/events', { id, type: 'shipment.created', data: { id: 'api-1' } }),
        h.api('POST', '/v1/events', { id, type: 'shipment.created', data: { id: 'api-2' } }),
      ]);
      assert.deepEqual([x.status, y.status].sort(), [202, 409]);
      const id2 = randomUUID();
      const same = await Promise.all(Array.from({ length: 3 }, () => h.api('POST', '/v1/events', { id: id2, type: 'shipment.created', data: { id: 'api-3' } })));
      assert.deepEqual(same.map((r) => r.status), [202, 202, 202]);
      assert.equal(same.filter((r) => r.headers['idempotent-replayed'] === 'true').length, 2);
    });
  });
}
