import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { systemClock } from '../src/core/clock.ts';
import { createAccount } from '../src/services/accounts.ts';
import { createServiceDeps } from '../src/services/deps.ts';
import { createEndpoint } from '../src/services/endpoints.ts';
import { publishEvents } from '../src/services/events.ts';
import type { Db } from '../src/storage/db.ts';
import { openStorage, type Storage } from '../src/storage/open.ts';
import { createScratchPostgres, ENGINES } from './helpers/engines.ts';
import { TEST_ADDRESSES, TEST_KEY } from './helpers/herald.ts';
import { startHeraldProcess, type HeraldProcess } from './helpers/process.ts';
import { startReceiver, type ReceivedRequest, type Receiver } from './helpers/receiver.ts';

/**
 * A worker in a crash loop: it starts, sends as many deliveries as it may
 * (20), and is killed (SIGKILL) while the receiver is still answering them;
 * seven times over, then a run to completion. Every delivery a killed worker
 * held was sent and never answered, so none of this is the receiver's fault:
 * it must spend none of the deliveries' attempts and add nothing to the
 * endpoint's failure streak. The endpoint's concurrency equals the failure
 * threshold (20), so had each lost send counted as an attempt, the seven
 * lost sends plus the claim that finds the attempts spent would fail 20
 * deliveries in a row and disable the endpoint.
 *
 * Real processes, real HTTPS to a loopback receiver, on PostgreSQL
 * (`herald start --role worker`: a dead worker's leases run out) and on the
 * embedded engine (`herald start`: the data-directory lock proves the
 * previous process dead, and start-up takes back its leases at once).
 */

const EVENTS = 200;
const CONCURRENCY = 20;
const KILLS = 7;
const ANSWER_MS = 1_000;
const LEASE_MS = 15_000;
/** A lost delivery comes due again this long after its lease was taken back (the first loss). */
const FIRST_LOSS_BACKOFF_MS = 30_000;

const eventId = (r: ReceivedRequest) => String(r.headers['x-service-event-id']);
const eventIds = (rs: readonly ReceivedRequest[]) => new Set(rs.map(eventId));
/** How many times each event arrived. */
function timesReceived(rs: readonly ReceivedRequest[]): Map<string, number> {
  const times = new Map<string, number>();
  for (const r of rs) times.set(eventId(r), (times.get(eventId(r)) ?? 0) + 1);
  return times;
}

/** Resolves true once `check` holds for what the receiver got, false after `ms`. */
function receiverUntil(receiver: Receiver, check: (rs: ReceivedRequest[]) => boolean, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    receiver.until(check).then(() => true),
    new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms))),
  ]).finally(() => clearTimeout(timer));
}

interface Engine {
  /** Environment and arguments of `herald start` for this engine. */
  env: Record<string, string>;
  args: string[];
  /** Opens the database from the test (on the embedded engine only while no Herald runs: it takes the data-directory lock). */
  open(): Promise<Storage>;
  /**
   * The killed process's leases end: on PostgreSQL they run out
   * (HERALD_LEASE_MS); on the embedded engine the next start takes them back
   * itself, so there is nothing to do.
   */
  leasesRunOut(db: Pick<Db, 'query'>): Promise<void>;
}

function crashLoop(name: string, makeEngine: () => Promise<{ engine: Engine; cleanup(): Promise<void> }>, skip: string | false) {
  describe(`a worker killed ${KILLS} times mid-request (${name})`, { skip }, () => {
    let receiver: Receiver;
    let engine: Engine;
    let cleanup: () => Promise<void>;
    const processes: HeraldProcess[] = [];

    before(async () => {
      receiver = await startReceiver();
      receiver.respond({ status: 200, delayMs: ANSWER_MS });
      ({ engine, cleanup } = await makeEngine());
    });
    after(async () => {
      for (const p of processes) p.child.kill('SIGKILL');
      await Promise.all(processes.map((p) => p.exited));
      await receiver?.close();
      await cleanup?.();
    });

    async function withDb<T>(fn: (db: Db, encryptionKey: Buffer) => Promise<T>): Promise<T> {
      const storage = await engine.open();
      try {
        return await fn(storage.db, storage.encryptionKey);
      } finally {
        await storage.close();
      }
    }

    async function start(): Promise<HeraldProcess> {
      const p = await startHeraldProcess(engine.args, engine.env);
      processes.push(p);
      return p;
    }

    /** SIGTERM, and the process must shut down cleanly (its results written). */
    async function stop(p: HeraldProcess): Promise<void> {
      p.child.kill('SIGTERM');
      assert.equal(await p.exited, 0, `a clean shutdown:\n${p.stderr()}`);
    }

    test('every event is delivered, the endpoint stays enabled and no attempt is spent on a lost send', { timeout: 150_000 }, async () => {
      const endpointId = await withDb(async (db, encryptionKey) => {
        const deps = createServiceDeps({ db, encryptionKey, clock: systemClock, addresses: TEST_ADDRESSES });
        const accountId = (await createAccount(db, 'Acme')).id;
        const created = await createEndpoint(deps, accountId, { url: receiver.url, event_types: ['shipment.created'] });
        const events = Array.from({ length: EVENTS }, (_, i) => ({ type: 'shipment.created', data: { id: i } }));
        // One at a time, each due a moment after the one before, as events
        // usually come: the oldest due deliveries are then the same ones
        // from one claim to the next, which is what made the crash loop
        // spend one set of deliveries' attempts over and over.
        for (const event of events) await publishEvents(deps, accountId, [event], { batch: false });
        return created.endpoint.id;
      });

      // Deliveries whose send was lost, by the kill that lost them.
      const lost: string[][] = [];
      for (let kill = 1; kill <= KILLS; kill++) {
        const before = receiver.requests.length;
        const worker = await start();
        // Killed with all its requests at the receiver, none answered yet
        // (each answer takes a second).
        const sent = await receiverUntil(receiver, (rs) => rs.length >= before + CONCURRENCY, 30_000);
        worker.child.kill('SIGKILL');
        assert.equal(await worker.exited, 'SIGKILL');
        assert.ok(sent, `run ${kill}: the worker sent ${receiver.requests.length - before} requests, not ${CONCURRENCY}:\n${worker.stderr()}`);

        await withDb(async (db) => {
          const held = await db.query<{ delivery_id: string; ms: number }>(
            `SELECT delivery_id, extract(epoch FROM lease_until - now()) * 1000 AS ms FROM in_flight`,
          );
          assert.ok(held.rowCount > 0, `run ${kill}: the worker died holding leases`);
          for (const { ms } of held.rows) assert.ok(Number(ms) > 0 && Number(ms) <= LEASE_MS, `a lease runs until up to ${LEASE_MS} ms after its claim: ${ms}`);
          lost.push(held.rows.map((r) => r.delivery_id));
          // What the previous kill lost was taken back when this run began: due again only
          // after the back-off, no attempt spent, the endpoint's streak untouched.
          if (kill > 1) await assertBackedOff(db, lost[kill - 2]!, endpointId);
          await engine.leasesRunOut(db);
        });
      }

      // The crash loop is over. A run that is not killed delivers at once
      // everything never lost, while what was lost waits out its back-off;
      // it is stopped cleanly there, so that the test can look at the
      // database (the embedded engine's is the running process's alone).
      // No more kills, so the receiver may as well answer at once (the test
      // is shorter by a dozen seconds).
      receiver.respond({ status: 200 });
      const lostIds = new Set(lost.flat());
      const { neverLost, lostEvents } = await withDb(async (db) => {
        const { rows } = await db.query<{ id: string; event_id: string }>(`SELECT id, event_id FROM deliveries`);
        return {
          neverLost: rows.filter((r) => !lostIds.has(r.id)).map((r) => r.event_id),
          lostEvents: rows.filter((r) => lostIds.has(r.id)).map((r) => r.event_id),
        };
      });
      let run = await start();
      const freshDelivered = await receiverUntil(receiver, (rs) => neverLost.every((id) => eventIds(rs).has(id)), 30_000);
      await stop(run);
      await withDb(async (db) => {
        assert.ok(freshDelivered, `every delivery never lost is sent once the crash loop is over: ${await describeState(db, endpointId)}`);
        await assertBackedOff(db, lost[KILLS - 1]!, endpointId);
        // The back-off lasts 30 s from the last loss. Rather than wait it
        // out, the test makes it pass, once it has checked that it was
        // applied (just above for the last kill's deliveries, after each
        // kill for the one before), and that nothing else is still pending.
        const { rows } = await db.query<{ attempts: number; lost_attempts: number; n: number }>(
          `SELECT attempts, lost_attempts, count(*)::int AS n FROM deliveries WHERE state = 'pending' GROUP BY 1, 2`,
        );
        assert.deepEqual(rows, [{ attempts: 0, lost_attempts: 1, n: rows[0]?.n ?? 0 }], 'only deliveries lost once wait');
        await db.query(`UPDATE deliveries SET next_attempt_at = now() WHERE state = 'pending'`);
      });
      // The last run goes on to completion.
      run = await start();
      // Each lost delivery arrives a second time.
      const allDelivered = await receiverUntil(receiver, (rs) => {
        const received = timesReceived(rs);
        return lostEvents.every((id) => (received.get(id) ?? 0) >= 2);
      }, 30_000);
      await stop(run);

      await withDb(async (db) => {
        const state = await describeState(db, endpointId);
        assert.ok(allDelivered, `every event is delivered: ${state}`);
        const { rows } = await db.query<{ state: string; attempts: number; lost_attempts: number; n: number }>(
          `SELECT state, attempts, lost_attempts, count(*)::int AS n FROM deliveries GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`,
        );
        // Each delivery was answered once; the lost sends are counted apart.
        const lostCount = lostIds.size;
        assert.deepEqual(
          rows,
          [
            ...(EVENTS - lostCount > 0 ? [{ state: 'succeeded', attempts: 1, lost_attempts: 0, n: EVENTS - lostCount }] : []),
            { state: 'succeeded', attempts: 1, lost_attempts: 1, n: lostCount },
          ],
          state,
        );
        const endpoint = await db.query<{ enabled: boolean; failure_streak: number; disabled_reason: string | null }>(
          `SELECT enabled, failure_streak, disabled_reason FROM endpoints WHERE id = $1`,
          [endpointId],
        );
        assert.deepEqual(endpoint.rows, [{ enabled: true, failure_streak: 0, disabled_reason: null }]);
      });
      // Each lost send went out once more, nothing else twice.
      assert.equal(eventIds(receiver.requests).size, EVENTS);
      assert.equal(receiver.requests.length, EVENTS + lostIds.size);
    });
  });
}

/** The deliveries a kill lost were taken back: pending, due again 30 s after, no attempt spent, the streak untouched. */
async function assertBackedOff(db: Pick<Db, 'query'>, ids: readonly string[], endpointId: string): Promise<void> {
  const { rows } = await db.query<{ state: string; attempts: number; lost_attempts: number; backoff_ms: number; in_flight: boolean }>(
    `SELECT state, attempts, lost_attempts, extract(epoch FROM next_attempt_at - updated_at) * 1000 AS backoff_ms,
            EXISTS (SELECT 1 FROM in_flight f WHERE f.delivery_id = d.id) AS in_flight
       FROM deliveries d WHERE id = ANY ($1::uuid[])`,
    [`{${ids.join(',')}}`],
  );
  assert.equal(rows.length, ids.length);
  for (const r of rows) {
    assert.deepEqual(
      { state: r.state, attempts: r.attempts, lost_attempts: r.lost_attempts, backoff_ms: Number(r.backoff_ms), in_flight: r.in_flight },
      { state: 'pending', attempts: 0, lost_attempts: 1, backoff_ms: FIRST_LOSS_BACKOFF_MS, in_flight: false },
    );
  }
  const endpoint = await db.query<{ enabled: boolean; failure_streak: number }>(`SELECT enabled, failure_streak FROM endpoints WHERE id = $1`, [endpointId]);
  assert.deepEqual(endpoint.rows, [{ enabled: true, failure_streak: 0 }]);
}

/** The deliveries by state and the endpoint, for a failure's message. */
async function describeState(db: Pick<Db, 'query'>, endpointId: string): Promise<string> {
  const deliveries = await db.query(`SELECT state, attempts, count(*)::int AS n FROM deliveries GROUP BY 1, 2 ORDER BY 1, 2`);
  const endpoint = await db.query(`SELECT enabled, failure_streak, disabled_reason FROM endpoints WHERE id = $1`, [endpointId]);
  return JSON.stringify({ deliveries: deliveries.rows, endpoint: endpoint.rows[0] });
}

const common = {
  HERALD_CONCURRENCY: String(CONCURRENCY),
  HERALD_ENDPOINT_CONCURRENCY: String(CONCURRENCY),
  HERALD_LEASE_MS: String(LEASE_MS),
  HERALD_LOG_LEVEL: 'error',
};

crashLoop(
  'PostgreSQL, herald start --role worker',
  async () => {
    const scratch = await createScratchPostgres();
    const open = () => openStorage({ databaseUrl: scratch.url, dataDir: '', encryptionKey: TEST_KEY });
    return {
      engine: {
        env: { ...common, DATABASE_URL: scratch.url, HERALD_ENCRYPTION_KEY: TEST_KEY.toString('base64') },
        args: ['--role', 'worker'],
        open,
        // Time passing, made explicit: the dead worker's leases run out
        // (waiting would take 15 s per kill). The next worker's claim takes
        // them back, as it does any lease that ran out.
        async leasesRunOut(db) {
          await db.query(`UPDATE in_flight SET lease_until = now()`);
        },
      },
      cleanup: () => scratch.drop(),
    };
  },
  !ENGINES.includes('postgres') && 'set HERALD_TEST_DATABASE_URL',
);

crashLoop(
  'embedded engine, herald start',
  async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'herald-crash-loop-'));
    // It takes the data-directory lock, as a Herald process would.
    const open = () => openStorage({ databaseUrl: undefined, dataDir, encryptionKey: undefined });
    return {
      engine: { env: { ...common, HERALD_DATA_DIR: dataDir, HERALD_PORT: '0' }, args: [], open, async leasesRunOut() {} },
      cleanup: async () => rmSync(dataDir, { recursive: true, force: true }),
    };
  },
  false,
);
