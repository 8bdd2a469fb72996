import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { ENGINES } from './helpers/engines.ts';
import { alarmData, createTestHerald, newEvent, type TestHerald } from './helpers/herald.ts';
import { assertProblem } from './helpers/problem.ts';
import { startReceiver, type Receiver } from './helpers/receiver.ts';
import { createMaintainer } from '../src/maintenance/maintainer.ts';
import { createServiceDeps } from '../src/services/deps.ts';
import { runReplays } from '../src/services/replays.ts';
import { insertEventsWithDeliveries } from '../src/storage/queries/events.ts';
import { DEFAULT_LIMITS, DEFAULT_RETENTION } from '../src/config.ts';

const resolved = () => alarmData({ resolved: true, resolved_at: '2026-11-20T09:00:00.000Z' });

for (const engine of ENGINES) {
  describe(`searching events and replaying them [${engine}]`, () => {
    let h: TestHerald;
    let good: Receiver;
    let bad: Receiver;
    let ok: { id: string };
    let failing: { id: string };
    const created: Array<{ id: string; type: string; created_at: string }> = [];

    before(async () => {
      h = await createTestHerald(engine, { dispatcher: { retry: { baseMs: 1, factor: 1, capMs: 1, jitter: 0, maxRetries: 0 } } });
      good = await startReceiver();
      bad = await startReceiver();
      bad.respond({ status: 500 });
      ok = (await h.api('POST', '/v1/endpoints', { url: good.url, event_types: ['alarm.created', 'alarm.resolved'] })).json;
      failing = (await h.api('POST', '/v1/endpoints', { url: bad.url, event_types: ['alarm.created'] })).json;
      // Six events a minute apart: created, resolved, created, …
      for (let i = 0; i < 6; i++) {
        const res = i % 2 === 0 ? await h.api('POST', '/v1/events', { type: 'alarm.created', data: alarmData() }) : await h.api('POST', '/v1/events', { type: 'alarm.resolved', data: resolved() });
        assert.equal(res.status, 202);
        created.push(res.json);
        h.clock.advance(60_000);
      }
      await h.drain({ advanceMs: 10 });
    });
    after(async () => {
      await good.close();
      await bad.close();
      await h.close();
    });

    const ids = (res: { json: { data: Array<{ id: string }> } }) => res.json.data.map((e) => e.id);
    const createdIds = (type?: string) => created.filter((e) => !type || e.type === type).map((e) => e.id).reverse();

    test('by type, time, id, endpoint and state, newest first, with a count', async () => {
      assert.deepEqual(ids(await h.api('GET', '/v1/events?type=alarm.resolved')), createdIds('alarm.resolved'));
      const range = await h.api('GET', `/v1/events?since=${created[1]!.created_at}&until=${created[3]!.created_at}`);
      assert.deepEqual(ids(range), [created[2]!.id, created[1]!.id]);
      assert.deepEqual(ids(await h.api('GET', `/v1/events?id=${created[4]!.id},${created[0]!.id}`)), [created[4]!.id, created[0]!.id]);
      // Only the created alarms went to the failing endpoint; each failed there.
      assert.deepEqual(ids(await h.api('GET', `/v1/events?endpoint_id=${failing.id}`)), createdIds('alarm.created'));
      assert.deepEqual(ids(await h.api('GET', '/v1/events?state=failed')), createdIds('alarm.created'));
      assert.deepEqual(ids(await h.api('GET', `/v1/events?state=succeeded&endpoint_id=${ok.id}`)), createdIds());
      assert.deepEqual(ids(await h.api('GET', `/v1/events?state=failed&endpoint_id=${ok.id}`)), []);
      assert.deepEqual(ids(await h.api('GET', '/v1/events?state=pending,skipped')), []);

      const count = await h.api('GET', '/v1/events/count?state=failed');
      assert.equal(count.status, 200);
      assert.deepEqual(count.json, { count: 3, capped: false });
      assert.deepEqual((await h.api('GET', '/v1/events/count')).json, { count: 6, capped: false });
    });

    test('a search pages with its filter, without gaps or repeats', async () => {
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const page: { json: { data: Array<{ id: string }>; next_cursor: string | null } } = await h.api('GET', `/v1/events?state=succeeded&limit=2${cursor ? `&cursor=${cursor}` : ''}`);
        seen.push(...ids(page));
        cursor = page.json.next_cursor;
      } while (cursor);
      assert.deepEqual(seen, createdIds());
    });

    test('bad filters are 400s naming the parameter, never a 500', async () => {
      assertProblem(await h.api('GET', '/v1/events?state=lost'), 'validation_failed', 'query.state');
      assertProblem(await h.api('GET', '/v1/events?id=nope'), 'validation_failed', 'query.id');
      assertProblem(await h.api('GET', '/v1/events?endpoint_id=12'), 'validation_failed', 'query.endpoint_id');
      assertProblem(await h.api('GET', '/v1/events?since=yesterday'), 'validation_failed', 'query.since');
      assertProblem(await h.api('GET', '/v1/events/count?type=,'), 'validation_failed', 'query.type');
      assertProblem(await h.api('GET', `/v1/events/count?since=${created[3]!.created_at}&until=${created[1]!.created_at}`), 'validation_failed', 'query.until');
      assertProblem(await h.api('GET', '/v1/events?id=' + Array.from({ length: 1001 }, () => randomUUID()).join(',')), 'validation_failed', 'query.id');
      assertProblem(await h.api('GET', '/v1/events/count?nonsense=1'), 'validation_failed');
    });

    test('the count stops at 10,000 and says there are more', async () => {
      const other = await h.newAccount('Many Events');
      const at = new Date('2026-11-01T00:00:00Z');
      for (let i = 0; i < 11; i++) {
        const events = Array.from({ length: 1000 }, () => newEvent({ accountId: other.accountId, type: 'alarm.created', data: {}, createdAt: at }));
        await insertEventsWithDeliveries(h.db, events);
      }
      assert.deepEqual((await h.api('GET', '/v1/events/count', undefined, other.apiKey)).json, { count: 10_000, capped: true });
      // The other account's events are not this one's.
      assert.deepEqual((await h.api('GET', '/v1/events/count')).json, { count: 6, capped: false });
    });

    test('a replay of the failed events: counted first, then new deliveries with their own attempts, the same event ids', async () => {
      bad.respond({ status: 200 });
      const preview = await h.api('POST', '/v1/replays', { filter: { states: ['failed'] }, endpoint_id: failing.id, dry_run: true });
      assert.equal(preview.status, 200, JSON.stringify(preview.json));
      assert.deepEqual(preview.json, { dry_run: true, count: 3, endpoint_id: failing.id, endpoints: 1 });
      assert.equal((await h.api('GET', '/v1/replays')).json.data.length, 0, 'a dry run creates nothing');

      const key = 'replay-failed-once';
      const body = { filter: { states: ['failed'] }, endpoint_id: failing.id };
      const res = await h.api('POST', '/v1/replays', body, undefined, { 'idempotency-key': key });
      assert.equal(res.status, 202, JSON.stringify(res.json));
      const replay = res.json;
      assert.equal(replay.state, 'running');
      assert.equal(replay.total, 3);
      assert.equal(replay.done, 0);
      assert.equal(replay.created_by.type, 'api_key');
      assert.ok(replay.created_by.id);
      assert.deepEqual(replay.filter.states, ['failed']);
      assert.ok(replay.filter.until, 'closed at its creation');
      // The same request again with its key: the same replay, not a second one.
      const again = await h.api('POST', '/v1/replays', body, undefined, { 'idempotency-key': key });
      assert.equal(again.status, 202);
      assert.equal(again.headers['idempotent-replayed'], 'true');
      assert.equal(again.json.id, replay.id);
      assert.equal((await h.api('GET', '/v1/replays')).json.data.length, 1);

      const before = bad.requests.length;
      await runReplays(h.deps, { maxBatches: 10 });
      const done = (await h.api('GET', `/v1/replays/${replay.id}`)).json;
      assert.equal(done.state, 'completed');
      assert.equal(done.done, 3);
      assert.equal(done.deliveries, 3);
      assert.ok(done.finished_at);
      await h.drain({ advanceMs: 10 });
      const sent = bad.requests.slice(before).map((r) => String(r.headers['x-service-event-id'])).sort();
      assert.deepEqual(sent, createdIds('alarm.created').sort(), 'each failed event once more, with its own id');
      // The event now has two deliveries to the endpoint: the failed one and the new one, which succeeded.
      const detail = (await h.api('GET', `/v1/events/${created[0]!.id}`)).json;
      const toFailing = detail.deliveries.filter((d: { endpoint_id: string }) => d.endpoint_id === failing.id);
      assert.deepEqual(toFailing.map((d: { state: string }) => d.state).sort(), ['failed', 'succeeded']);
      for (const d of toFailing) assert.ok(d.attempt_log.every((a: { delivery_id: string }) => a.delivery_id === d.id));
      // Its state toward that endpoint is now its newest delivery's.
      assert.deepEqual(ids(await h.api('GET', '/v1/events?state=failed')), []);
    });

    test('a replay to every subscribed endpoint passes over a disabled one; a disabled target is refused', async () => {
      assert.equal((await h.api('POST', `/v1/endpoints/${failing.id}/disable`)).status, 200);
      assertProblem(await h.api('POST', '/v1/replays', { event_ids: [created[0]!.id], endpoint_id: failing.id }), 'endpoint_disabled');
      const res = await h.api('POST', '/v1/replays', { event_ids: [created[0]!.id, created[1]!.id] });
      assert.equal(res.status, 202, JSON.stringify(res.json));
      const beforeGood = good.requests.length;
      const beforeBad = bad.requests.length;
      await runReplays(h.deps, { maxBatches: 10 });
      await h.drain({ advanceMs: 10 });
      const done = (await h.api('GET', `/v1/replays/${res.json.id}`)).json;
      assert.equal(done.state, 'completed');
      assert.equal(done.deliveries, 2, 'both events to the enabled endpoint');
      assert.deepEqual(done.skipped, { disabled: 1, unsubscribed: 0 }, 'the created alarm to the disabled one');
      assert.equal(good.requests.length - beforeGood, 2);
      assert.equal(bad.requests.length - beforeBad, 0);
      assert.equal((await h.api('POST', `/v1/endpoints/${failing.id}/enable`)).status, 200);
    });

    test('a replay to one endpoint counts the events of types it does not subscribe to', async () => {
      const res = await h.api('POST', '/v1/replays', { filter: { since: created[0]!.created_at }, endpoint_id: failing.id });
      assert.equal(res.status, 202);
      await runReplays(h.deps, { maxBatches: 10 });
      const done = (await h.api('GET', `/v1/replays/${res.json.id}`)).json;
      assert.deepEqual([done.total, done.done, done.deliveries, done.skipped.unsubscribed], [6, 6, 3, 3]);
      await h.drain({ advanceMs: 10 });
    });

    test('bad replays are named problems, never a 500', async () => {
      assertProblem(await h.api('POST', '/v1/replays', {}), 'validation_failed', 'filter');
      assertProblem(await h.api('POST', '/v1/replays', { filter: {}, event_ids: [created[0]!.id] }), 'validation_failed', 'filter');
      assertProblem(await h.api('POST', '/v1/replays', { event_ids: ['x'] }), 'validation_failed', 'event_ids');
      assertProblem(await h.api('POST', '/v1/replays', { filter: { states: ['gone'] } }), 'validation_failed', 'filter.states');
      assertProblem(await h.api('POST', '/v1/replays', { filter: { since: 'soon' } }), 'validation_failed', 'filter.since');
      assertProblem(await h.api('POST', '/v1/replays', { filter: {}, endpoint_id: 'x' }), 'validation_failed', 'endpoint_id');
      assertProblem(await h.api('POST', '/v1/replays', { filter: {}, endpoint_id: '0196f1d2-0000-7000-8000-000000000000' }), 'not_found');
      assertProblem(await h.api('POST', '/v1/replays', { filter: { types: ['alarm.created'], until: '2020-01-01T00:00:00Z' } }), 'nothing_to_replay');
      assertProblem(await h.api('POST', '/v1/replays', { filter: { colour: 'red' } }), 'validation_failed');
      assertProblem(await h.api('POST', '/v1/replays', 'not json'), 'malformed_json');
      assertProblem(await h.api('GET', '/v1/replays/nope'), 'validation_failed');
      assertProblem(await h.api('GET', '/v1/replays/0196f1d2-0000-7000-8000-000000000000'), 'not_found');
    });

    test('the limits: events per replay, and replays running at once', async () => {
      const limited = { ...h.deps, limits: { ...DEFAULT_LIMITS, replayEvents: 5 } };
      const { createReplay } = await import('../src/services/replays.ts');
      await assert.rejects(createReplay(limited, h.accountId, { kind: 'api_key', keyId: '0196f1d2-0000-7000-8000-000000000000' }, { filter: {} }), (err: any) => {
        assert.equal(err.code, 'limit_exceeded');
        assert.deepEqual(err.limit, { setting: 'HERALD_MAX_REPLAY_EVENTS', value: 5 });
        return true;
      });
      const running: string[] = [];
      for (let i = 0; i < 3; i++) running.push((await h.api('POST', '/v1/replays', { event_ids: [created[i]!.id] })).json.id);
      assertProblem(await h.api('POST', '/v1/replays', { event_ids: [created[4]!.id] }), 'replay_limit');
      for (const id of running) {
        const canceled = await h.api('POST', `/v1/replays/${id}/cancel`);
        assert.equal(canceled.status, 200);
        assert.equal(canceled.json.state, 'canceled');
      }
      assertProblem(await h.api('POST', `/v1/replays/${running[0]}/cancel`), 'conflict');
      assert.equal(await runReplays(h.deps, { maxBatches: 10 }), 0, 'a canceled replay sends nothing');
    });

    test('in bounded batches, from the stored position: a new process takes it up where the last stopped', async () => {
      const res = await h.api('POST', '/v1/replays', { filter: { types: ['alarm.resolved', 'alarm.created'] }, endpoint_id: ok.id });
      assert.equal(res.status, 202);
      // One endpoint and at most two deliveries per transaction: batches of two events.
      const small = { ...h.deps, limits: { ...DEFAULT_LIMITS, batchDeliveries: 2 } };
      assert.equal(await runReplays(small, { maxBatches: 1 }), 1);
      let now = (await h.api('GET', `/v1/replays/${res.json.id}`)).json;
      assert.deepEqual([now.state, now.done, now.deliveries], ['running', 2, 2]);
      // Another process: its own deps on the same database, through its maintainer.
      const other = createServiceDeps({ db: h.db, encryptionKey: h.deps.encryptionKey, clock: h.clock.now, addresses: h.deps.addresses, limits: { ...DEFAULT_LIMITS, batchDeliveries: 2 } });
      const logs: string[] = [];
      const log = { info: () => {}, warn: (o: object, m?: string) => logs.push(String(m)), error: (o: object, m?: string) => logs.push(`${m} ${JSON.stringify(o)}`) };
      const maintainer = createMaintainer({
        db: h.db,
        clock: h.clock.now,
        config: { retention: DEFAULT_RETENTION, sessionIdleMs: 60_000 },
        log,
        onSchemaTooNew: () => {},
        replays: (maxBatches) => runReplays(other, { maxBatches }),
        tuning: { batchPauseMs: 0 },
      });
      try {
        const report = await maintainer.runOnce();
        assert.deepEqual(logs, []);
        // Two batches of two events, and a third that finds none left and completes it.
        assert.equal(report.replayBatches, 3);
      } finally {
        await maintainer.stop();
      }
      now = (await h.api('GET', `/v1/replays/${res.json.id}`)).json;
      assert.deepEqual([now.state, now.done, now.deliveries], ['completed', 6, 6]);
      const before = good.requests.length;
      await h.drain({ advanceMs: 10 });
      const sent = good.requests.slice(before).map((r) => String(r.headers['x-service-event-id'])).sort();
      assert.deepEqual(sent, createdIds().sort(), 'every event exactly once');
    });

    test('another account sees none of it', async () => {
      const other = await h.newAccount('Elsewhere');
      assert.deepEqual((await h.api('GET', '/v1/replays', undefined, other.apiKey)).json.data, []);
      const mine = (await h.api('GET', '/v1/replays')).json.data[0];
      assertProblem(await h.api('GET', `/v1/replays/${mine.id}`, undefined, other.apiKey), 'not_found');
      assertProblem(await h.api('POST', `/v1/replays/${mine.id}/cancel`, undefined, other.apiKey), 'not_found');
      assert.deepEqual((await h.api('GET', `/v1/events?endpoint_id=${ok.id}`, undefined, other.apiKey)).json.data, []);
      assertProblem(await h.api('POST', '/v1/replays', { event_ids: [created[0]!.id] }, other.apiKey), 'nothing_to_replay');
      assertProblem(await h.api('POST', '/v1/replays', { event_ids: [created[0]!.id], endpoint_id: ok.id }, other.apiKey), 'not_found');
    });
  });
}
