import type { RetentionConfig } from '../config.ts';
import { databaseTime, type Clock } from '../core/clock.ts';
import type { Db, SessionLock } from '../storage/db.ts';
import { analyzeStaleTables, vacuumChurningTables, vacuumEmbedded } from '../storage/maintenance.ts';
import { assertSchemaKnown, SchemaTooNewError } from '../storage/migrate.ts';
import { sweepExpiredPreviousSecrets } from '../storage/queries/endpoints.ts';
import { IDEMPOTENCY_KEY_TTL_MS } from '../storage/queries/idempotency-keys.ts';
import { ATTEMPTS_KEPT, pruneAttempts } from '../storage/queries/record-results.ts';
import {
  accountIdsAfter,
  deleteEventsWithoutDeliveriesOf,
  deleteExpiredDeliveries,
  markAttemptLogsGrown,
  sweepIdempotencyKeys,
  sweepSessions,
  takeGrownAttemptLogs,
  type EventWalkPosition,
} from '../storage/queries/retention.ts';

/**
 * The maintainer: everything that keeps the database the size and shape it
 * should be, in one loop. Every process runs one; one at a time leads (on
 * PostgreSQL, the holder of a session-level advisory lock on a connection of
 * its own; on the embedded engine, the one process) and does the work:
 * retention, attempt-log pruning, sweeping of expired idempotency keys,
 * ended sessions and previous signing secrets whose overlap ended, VACUUM and ANALYZE. Every process, leader or not, checks
 * that no newer Herald has migrated the database (`onSchemaTooNew`).
 */

export interface Logger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface MaintainerConfig {
  retention: RetentionConfig;
  /** A panel session unused for this long has ended (HERALD_SESSION_IDLE_MS). */
  sessionIdleMs: number;
}

/** How often each job runs and how big its steps are; tests shrink them. */
export interface MaintainerTuning {
  /** How often the loop looks for a job that is due. */
  tickMs: number;
  schemaCheckMs: number;
  /** How often a process that does not lead tries to. */
  leaderRetryMs: number;
  pruneMs: number;
  /** How often a prune takes each endpoint's whole log rather than what follows the last prune's cut-off. */
  fullPruneMs: number;
  retentionMs: number;
  /** The next retention run when the last one stopped at its budget with work left. */
  retentionBacklogMs: number;
  sweepMs: number;
  /** VACUUM (ANALYZE) of the embedded engine's busy tables. */
  embeddedVacuumMs: number;
  /** ANALYZE of PostgreSQL tables that outgrew their statistics. */
  statisticsMs: number;
  /** VACUUM of the small tables every delivery inserts into and deletes from, on PostgreSQL. */
  churnVacuumMs: number;
  /** Rows per delete statement. */
  batchSize: number;
  /** Delete statements per job (each retention walk is one) per run: a larger backlog is caught up over several runs. */
  batchesPerRun: number;
  /** Pause between two delete statements, so others get the database in between. */
  batchPauseMs: number;
  /** The event walk starts over this often, for events whose deliveries went after it passed them (with their endpoint). */
  eventWalkRestartMs: number;
  /** How long stop() waits for a job under way before it gives the lock up anyway. */
  stopTimeoutMs: number;
}

export const DEFAULT_TUNING: Readonly<MaintainerTuning> = Object.freeze({
  tickMs: 1_000,
  schemaCheckMs: 5_000,
  leaderRetryMs: 10_000,
  // Every second, so that no run is large (the same pace the dispatcher pruned at before).
  pruneMs: 1_000,
  fullPruneMs: 60_000,
  retentionMs: 60_000,
  retentionBacklogMs: 5_000,
  sweepMs: 10 * 60_000,
  // In the benchmark, 1,141 deliveries/s with a pass every 10 s against 369/s without (storage/maintenance.ts).
  embeddedVacuumMs: 10_000,
  statisticsMs: 5_000,
  // Every second: in a burst in_flight gains and loses thousands of rows a
  // second, and each claim reads the table whole, dead rows included (a
  // claim cost a third more with a pass every 10 s, measured with the
  // benchmark's burst to one origin).
  churnVacuumMs: 1_000,
  batchSize: 1_000,
  batchesPerRun: 20,
  batchPauseMs: 50,
  eventWalkRestartMs: 24 * 3_600_000,
  stopTimeoutMs: 5_000,
});

/**
 * A prune deletes only attempts that started at most this long before the
 * oldest attempt the previous prune of the endpoint kept: what lies further
 * back was deleted then, and walking its dead index entries again every second
 * cost the database (3 to 5 % of a burst). The margin covers attempts that
 * started before that cut-off and were written after the prune (slow answers);
 * anything older still (a timed-out attempt, or one from a worker whose clock
 * is behind) waits for the full prune (`fullPruneMs`).
 */
const PRUNE_MARGIN_MS = 2_000;

/** Key of the session-level advisory lock whose holder leads ("HERM"). */
export const MAINTAINER_LOCK = 0x4845_524d;

export interface RetentionReport {
  deliveries: number;
  attempts: number;
  events: number;
  /** True when the run stopped at its budget with more to delete. */
  more: boolean;
}

export interface MaintenanceReport {
  /** This process led the run. */
  leader: boolean;
  /** False once a newer Herald has migrated the database. */
  schemaKnown: boolean;
  retention?: RetentionReport;
  prunedAttempts?: number;
  sweptIdempotencyKeys?: number;
  sweptSessions?: number;
  /** Previous signing secrets erased because their rotation's overlap had ended. */
  sweptPreviousSecrets?: number;
  /** Tables vacuumed or analysed. */
  maintained?: string[];
  /** Batches of replays run. */
  replayBatches?: number;
}

export interface Maintainer {
  start(): void;
  /** Stops the loop, waits (at most stopTimeoutMs) for a job under way, and gives up leadership. */
  stop(): Promise<void>;
  /** Every job once, now, whatever its interval (tests). */
  runOnce(): Promise<MaintenanceReport>;
}

export interface MaintainerDeps {
  db: Db;
  clock: Clock;
  config: MaintainerConfig;
  log: Logger;
  /** Called once, when the schema check finds a newer Herald's migration: the dispatcher stops claiming. */
  onSchemaTooNew: (err: SchemaTooNewError) => void;
  /**
   * Runs up to this many batches of the running replays (services/replays.ts);
   * returns how many it ran. The leader drives replays, so that one process
   * at a time does; their progress is in the database, so a new leader
   * takes them up where the last one stopped.
   */
  replays?: (maxBatches: number) => Promise<number>;
  tuning?: Partial<MaintainerTuning>;
}

interface Job {
  name: string;
  every: () => number;
  run: () => Promise<unknown>;
  next: number;
}

/** Waits for `promise`, but no longer than `ms`. */
async function within(ms: number, promise: Promise<unknown>): Promise<void> {
  let bound: NodeJS.Timeout | undefined;
  await Promise.race([promise, new Promise((r) => (bound = setTimeout(r, ms)))]);
  clearTimeout(bound);
}

export function createMaintainer({ db, clock, config, log, onSchemaTooNew, replays, tuning: given }: MaintainerDeps): Maintainer {
  const tuning: MaintainerTuning = { ...DEFAULT_TUNING, ...given };
  const { batchSize, batchesPerRun } = tuning;
  const monotonic = () => performance.now();

  let lock: SessionLock | undefined;
  let schemaKnown = true;
  let stopping = false;
  let timer: NodeJS.Timeout | undefined;
  // One run at a time: the loop's ticks and runOnce() queue behind each other.
  let running: Promise<unknown> = Promise.resolve();
  let nextSchemaCheck = 0;
  let nextLeaderTry = 0;

  // Where the retention walks got to, so a backlog is taken up where the
  // last run stopped. Forgotten with leadership.
  let succeededAfter: string | null = null;
  let undeliveredAfter: string | null = null;
  let eventAccountAfter: string | null = null;
  let eventPositions = new Map<string, EventWalkPosition>();
  let eventWalkStartedAt = monotonic();
  let retentionBacklog = false;
  // Per endpoint, the start time of the oldest attempt the last prune kept.
  let pruneCutoffs = new Map<string, Date>();
  let fullPruneAt = monotonic();

  const pause = () => (tuning.batchPauseMs > 0 && !stopping ? new Promise((r) => setTimeout(r, tuning.batchPauseMs)) : Promise.resolve());

  async function checkSchema(): Promise<boolean> {
    if (!schemaKnown) return false;
    try {
      await assertSchemaKnown(db);
      return true;
    } catch (err) {
      if (!(err instanceof SchemaTooNewError)) throw err;
      schemaKnown = false;
      log.error({ schema: err.applied, known: err.known }, `${err.message}. This process stops claiming deliveries and maintaining the database; what it has in flight still finishes`);
      // A newer Herald knows the tables better: it maintains them from now on.
      await giveUpLeadership();
      onSchemaTooNew(err);
      return false;
    }
  }

  async function giveUpLeadership(): Promise<void> {
    const held = lock;
    lock = undefined;
    await held?.release();
  }

  function forgetWalks(): void {
    pruneCutoffs = new Map();
    succeededAfter = null;
    undeliveredAfter = null;
    eventAccountAfter = null;
    eventPositions = new Map();
    eventWalkStartedAt = monotonic();
  }

  /** True when this process leads now: it holds the lock, or has just taken it. */
  async function lead(force: boolean): Promise<boolean> {
    if (lock) {
      if (await lock.check()) return true;
      log.warn({}, 'the maintainer lost its database connection, and with it the lead; another process (or this one, later) takes over');
      // Closed, not just forgotten: a connection that only stopped answering
      // in time would otherwise keep the lock from everyone. Not waited for.
      void lock.release().catch(() => {});
      lock = undefined;
    }
    if (!force && monotonic() < nextLeaderTry) return false;
    nextLeaderTry = monotonic() + tuning.leaderRetryMs;
    const taken = await db.tryLockSession(MAINTAINER_LOCK);
    // stop() may have given up waiting for this (taking the lock opens a
    // connection, which can take longer): kept now, nobody would release it,
    // and no process would lead while this one lives.
    if (taken && stopping) {
      await taken.release().catch(() => {});
      return false;
    }
    lock = taken;
    if (lock) {
      forgetWalks();
      log.info({}, 'this process maintains the database (retention, attempt-log pruning, vacuuming)');
    }
    return lock !== undefined;
  }

  // Retention

  /** One walk over one kind of delivery, from `after`; returns where it stopped (null: done). */
  async function retainDeliveries(
    report: RetentionReport,
    budget: { left: number },
    states: Array<'succeeded' | 'failed' | 'skipped'>,
    days: number,
    after: string | null,
  ): Promise<string | null> {
    while (budget.left > 0 && !stopping) {
      budget.left -= 1;
      const batch = await deleteExpiredDeliveries(db, {
        states,
        days,
        eventDays: config.retention.succeededDays,
        now: databaseTime(clock),
        afterEndpoint: after,
        limit: batchSize,
      });
      report.deliveries += batch.deliveries;
      report.attempts += batch.attempts;
      report.events += batch.events;
      if (batch.picked < batchSize) return null;
      after = batch.lastEndpoint;
      await pause();
    }
    report.more = true;
    return after;
  }

  /** Events older than the succeeded retention with no delivery: account by account, each from where it got to. */
  async function retainEventsWithoutDeliveries(report: RetentionReport, budget: { left: number }): Promise<void> {
    if (monotonic() - eventWalkStartedAt >= tuning.eventWalkRestartMs) forgetWalks();
    while (budget.left > 0 && !stopping) {
      const accounts = await accountIdsAfter(db, eventAccountAfter, 100);
      if (accounts.length === 0) {
        eventAccountAfter = null;
        return;
      }
      for (const accountId of accounts) {
        for (;;) {
          if (budget.left <= 0 || stopping) {
            report.more = true;
            return;
          }
          budget.left -= 1;
          const batch = await deleteEventsWithoutDeliveriesOf(db, {
            accountId,
            days: config.retention.succeededDays,
            now: databaseTime(clock),
            after: eventPositions.get(accountId) ?? null,
            limit: batchSize,
          });
          report.events += batch.deleted;
          if (batch.last) eventPositions.set(accountId, batch.last);
          if (batch.done) break;
          await pause();
        }
        eventAccountAfter = accountId;
      }
    }
    report.more = true;
  }

  async function retention(): Promise<RetentionReport> {
    const report: RetentionReport = { deliveries: 0, attempts: 0, events: 0, more: false };
    // A budget for each walk, so that none waits for another's backlog.
    succeededAfter = await retainDeliveries(report, { left: batchesPerRun }, ['succeeded'], config.retention.succeededDays, succeededAfter);
    undeliveredAfter = await retainDeliveries(report, { left: batchesPerRun }, ['failed', 'skipped'], config.retention.undeliveredDays, undeliveredAfter);
    await retainEventsWithoutDeliveries(report, { left: batchesPerRun });
    retentionBacklog = report.more;
    if (report.deliveries + report.events > 0) log.info({ ...report }, 'retention: deleted deliveries and events past their retention');
    return report;
  }

  // The attempt log

  async function pruneAttemptLogs(): Promise<number> {
    let deleted = 0;
    // Now and then, every endpoint remembered, each from the start of its log.
    let full = monotonic() - fullPruneAt >= tuning.fullPruneMs;
    for (let i = 0; i < batchesPerRun && !stopping; i++) {
      let endpoints = await takeGrownAttemptLogs(db, batchSize);
      if (full) {
        endpoints = [...new Set([...endpoints, ...pruneCutoffs.keys()])];
        pruneCutoffs = new Map();
        fullPruneAt = monotonic();
      }
      if (endpoints.length === 0) break;
      const since = new Map<string, Date>();
      if (!full) {
        for (const id of endpoints) {
          const cutoff = pruneCutoffs.get(id);
          if (cutoff) since.set(id, new Date(cutoff.getTime() - PRUNE_MARGIN_MS));
        }
      }
      full = false;
      try {
        // A hundred endpoints a transaction, so that none is long.
        for (let at = 0; at < endpoints.length; at += 100) {
          deleted += await pruneAttempts(db, endpoints.slice(at, at + 100), ATTEMPTS_KEPT, { since, cutoffs: pruneCutoffs });
        }
      } catch (err) {
        // Their logs are still long: the next run takes them again.
        await markAttemptLogsGrown(db, endpoints).catch(() => {});
        throw err;
      }
    }
    return deleted;
  }

  // Sweeping

  async function sweep(what: (limit: number) => Promise<number>): Promise<number> {
    let swept = 0;
    for (let i = 0; i < batchesPerRun && !stopping; i++) {
      const n = await what(batchSize);
      swept += n;
      if (n < batchSize) break;
      await pause();
    }
    return swept;
  }

  const sweepKeys = () => sweep((limit) => sweepIdempotencyKeys(db, { ttlMs: IDEMPOTENCY_KEY_TTL_MS, now: databaseTime(clock), limit }));
  const sweepEndedSessions = () => sweep((limit) => sweepSessions(db, { idleMs: config.sessionIdleMs, now: databaseTime(clock), limit }));
  // An attempt erases an expired previous secret when it finds one; this
  // erases those of endpoints no attempt went to since.
  const sweepPreviousSecrets = () => sweep((limit) => sweepExpiredPreviousSecrets(db, { now: databaseTime(clock), limit }));

  // The jobs

  const report: MaintenanceReport = { leader: false, schemaKnown: true };
  const jobs: Job[] = [
    { name: 'attempt-log pruning', every: () => tuning.pruneMs, run: async () => (report.prunedAttempts = await pruneAttemptLogs()), next: 0 },
    {
      name: 'retention',
      every: () => (retentionBacklog ? tuning.retentionBacklogMs : tuning.retentionMs),
      run: async () => (report.retention = await retention()),
      next: 0,
    },
    ...(replays
      ? [{ name: 'replays', every: () => tuning.tickMs, run: async () => (report.replayBatches = await replays(batchesPerRun)), next: 0 }]
      : []),
    {
      name: 'sweeping',
      every: () => tuning.sweepMs,
      run: async () => {
        report.sweptIdempotencyKeys = await sweepKeys();
        report.sweptSessions = await sweepEndedSessions();
        report.sweptPreviousSecrets = await sweepPreviousSecrets();
      },
      next: 0,
    },
    ...(db.engine === 'pglite'
      ? [
          {
            name: 'vacuuming',
            every: () => tuning.embeddedVacuumMs,
            run: async () => {
              await vacuumEmbedded(db);
              (report.maintained ??= []).push('vacuum (analyze) of the busy tables');
            },
            next: 0,
          },
        ]
      : [
          {
            name: 'analysing',
            every: () => tuning.statisticsMs,
            run: async () => (report.maintained ??= []).push(...(await analyzeStaleTables(db)).map((t) => `analyze ${t}`)),
            next: 0,
          },
          {
            name: 'vacuuming',
            every: () => tuning.churnVacuumMs,
            run: async () => (report.maintained ??= []).push(...(await vacuumChurningTables(db)).map((t) => `vacuum ${t}`)),
            next: 0,
          },
        ]),
  ];

  /** One pass of the loop: the schema check, then each job that is due (all of them when `all`). */
  async function pass(all: boolean): Promise<MaintenanceReport> {
    for (const key of Object.keys(report) as Array<keyof MaintenanceReport>) delete report[key];
    const now = monotonic();
    if (all || now >= nextSchemaCheck) {
      nextSchemaCheck = now + tuning.schemaCheckMs;
      try {
        await checkSchema();
      } catch (err) {
        log.error({ err }, 'checking the schema version failed; trying again later');
      }
    }
    report.schemaKnown = schemaKnown;
    report.leader = false;
    if (!schemaKnown || stopping) return { ...report };
    const due = jobs.filter((job) => all || now >= job.next);
    if (due.length === 0) return { ...report, leader: lock !== undefined };
    try {
      report.leader = await lead(all);
    } catch (err) {
      log.error({ err }, 'trying to take the maintainer lock failed; trying again later');
    }
    if (!report.leader) return { ...report };
    for (const job of due) {
      if (stopping) break;
      try {
        await job.run();
      } catch (err) {
        log.error({ err }, `${job.name} failed; trying again later`);
      }
      job.next = monotonic() + job.every();
    }
    return { ...report };
  }

  function queue(all: boolean): Promise<MaintenanceReport> {
    const run = running.then(() => pass(all));
    running = run.catch(() => undefined);
    return run;
  }

  function schedule(): void {
    if (stopping) return;
    timer = setTimeout(() => {
      void queue(false).finally(schedule);
    }, tuning.tickMs);
    timer.unref();
  }

  let stopped: Promise<void> | undefined;
  return {
    start() {
      if (timer || stopping) return;
      schedule();
    },
    runOnce: () => queue(true),
    stop() {
      stopped ??= (async () => {
        stopping = true;
        clearTimeout(timer);
        await within(tuning.stopTimeoutMs, running);
        // Given up even if a job is still under way: its statements are
        // short and harmless to repeat, and another process takes over now.
        await within(tuning.stopTimeoutMs, giveUpLeadership().catch(() => {}));
      })();
      return stopped;
    },
  };
}
