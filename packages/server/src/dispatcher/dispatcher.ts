import type { Agent } from 'undici';
import type { DispatcherConfig } from '../config.ts';
import { unixSeconds } from '../core/clock.ts';
import { uuidV7 } from '../core/ids.ts';
import { classifyOutcome } from '../core/outcome.ts';
import { nextAttemptAt, parseRetryAfter } from '../core/retry-policy.ts';
import { decryptSecret } from '../core/secrets.ts';
import type { ServiceDeps } from '../services/deps.ts';
import { DELIVERIES_CHANNEL } from '../storage/queries/deliveries.ts';
import { nextDueIn } from '../storage/queries/claim-deliveries.ts';
import { assertSchemaKnown, SchemaTooNewError } from '../storage/migrate.ts';
import { ATTEMPTS_KEPT, pruneAttempts, type AttemptOutcome } from '../storage/queries/record-results.ts';
import { claimDue, type Claim } from './claim.ts';
import { createRecorder, type Finished } from './record.ts';
import { buildRequestHeaders, signatureOf } from '../core/request-headers.ts';
import { createAgent, Flight, type ResolveHost, type SendResult } from './send.ts';

export { ATTEMPTS_KEPT };

const SECRETS_CACHED = 10_000;
/** How often the attempt log of the endpoints sent to since the last time is trimmed to ATTEMPTS_KEPT. */
const PRUNE_EVERY_MS = 1_000;
/**
 * A run deletes only attempts that started at most this long before the
 * oldest attempt the previous run kept: what lies further back was deleted
 * then (its index entries are dead, and walking them again each second cost
 * the burst 3 to 5 %). The margin covers attempts that started before that
 * cutoff and were written after the run (slow answers); anything older still
 * (a timed-out attempt, or one from a worker whose clock is behind) is left
 * to the full run: once a minute and at shutdown, of every endpoint sent to
 * or remembered since the last full run.
 */
const PRUNE_MARGIN_MS = 2_000;
/** How often a run takes each endpoint's whole log, whatever the previous run kept. */
const FULL_PRUNE_EVERY_MS = 60_000;
/**
 * After a claim that found fewer due deliveries than it had room for, an
 * answer or a written result waits this long before it claims again, so
 * that the answers of that time share one claim. New deliveries wake the
 * dispatcher at once through their notification, and an answer from an
 * endpoint that was at its cap claims at once (its rows were passed over).
 */
const SHORT_CLAIM_LINGER_MS = 20;
/**
 * How often a running worker checks that no newer Herald has migrated the
 * database since it started (it stops claiming if one has).
 */
const SCHEMA_CHECK_EVERY_MS = 5_000;
/**
 * Body bytes a claim signs and hands to undici before it lets the event loop
 * turn: signing costs about 0.6 ms per MiB, so one 1 MiB event to 500
 * endpoints held the loop (and /healthz, and every answer) for 300 ms at once.
 * Small events never reach it: 500 deliveries of 16 KiB is one slice.
 */
const LAUNCH_SLICE_BYTES = 8 * 1024 * 1024;

export interface Logger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface DispatcherDeps extends ServiceDeps {
  config: DispatcherConfig;
  log?: Logger;
  /** Random source for jitter; tests pass a fixed one. */
  random?: () => number;
  /** TLS options for outgoing connections (tests pass their CA). */
  connect?: Parameters<typeof createAgent>[0]['connect'];
  /** How host names are resolved (node's DNS unless given; tests pass their own). */
  lookup?: ResolveHost;
}

export interface TickReport {
  claimed: number;
  succeeded: number;
  retrying: number;
  failed: number;
  skipped: number;
}

export interface Dispatcher {
  /** Runs continuously: wakes on NOTIFY, at the next due time, and on a poll fallback. */
  start(): Promise<void>;
  /** Stops claiming, lets in-flight attempts finish within `graceMs`, aborts and records the rest. */
  stop(graceMs?: number): Promise<void>;
  /** One claim → send → record round, awaited to the end. For tests and tools. */
  tick(): Promise<TickReport>;
  /** Trims each recently used endpoint's attempt log to the newest 100. */
  pruneAttempts(): Promise<number>;
  /**
   * False, and claiming stops for good, once a newer Herald has migrated the
   * database past what this code knows (it would misread the newer one's
   * leases). Runs every 5 s while started; in-flight attempts still finish.
   */
  checkSchema(): Promise<boolean>;
  readonly inFlight: number;
}

export function createDispatcher(deps: DispatcherDeps): Dispatcher {
  const { db, config, clock } = deps;
  const random = deps.random ?? Math.random;
  const maxAttempts = config.retry.maxRetries + 1;
  const agent: Agent = createAgent({ connections: config.endpointConcurrency, addresses: deps.addresses, timeoutMs: config.requestTimeoutMs, connect: deps.connect, lookup: deps.lookup });
  const recorder = createRecorder({
    db,
    disableAfter: config.disableAfter,
    now: clock,
    onDisabled: (ids) => deps.log?.warn({ endpoints: ids }, `endpoint disabled after ${config.disableAfter} consecutive failed deliveries`),
    onError: (err) => deps.log?.error({ err }, 'recording attempt results failed; retrying'),
    lingerMs: config.recordLingerMs,
  });

  // Decrypted signing secrets by endpoint, with the ciphertext they came
  // from: a rotation stores a new ciphertext, which misses and replaces the
  // entry, so the new secret still signs the very next attempt.
  const secrets = new Map<string, { encrypted: Buffer; secret: string }>();
  function secretOf(claim: Claim): string {
    const hit = secrets.get(claim.endpoint_id);
    if (hit && hit.encrypted.equals(claim.secret_encrypted)) return hit.secret;
    const secret = decryptSecret(deps.encryptionKey, claim.secret_encrypted, claim.endpoint_id);
    if (secrets.size >= SECRETS_CACHED) secrets.clear();
    secrets.set(claim.endpoint_id, { encrypted: claim.secret_encrypted, secret });
    return secret;
  }

  const inFlightByEndpoint = new Map<string, number>();
  // The sum of inFlightByEndpoint's counts: requests not yet answered.
  let awaitingAnswer = 0;
  // Requests not yet answered, for a shutdown to abort.
  const flights = new Set<DeliveryFlight>();
  // Claimed deliveries whose result is not yet written.
  let inFlight = 0;
  // Waiting for inFlight to reach 0 (tick, shutdown).
  let settledWaiters: Array<() => void> = [];
  let running = false;
  let pumping = false;
  let wakeAgain = false;
  // The last claim came back with fewer deliveries than it asked for: no
  // due work was left that this worker had room for, but for rows another
  // worker's claim held at that moment (SKIP LOCKED), which the linger covers.
  let lastClaimShort = false;
  let lingerTimer: NodeJS.Timeout | undefined;
  let timer: NodeJS.Timeout | undefined;
  let pruneTimer: NodeJS.Timeout | undefined;
  let unlisten: (() => Promise<void>) | undefined;
  let stopping: Promise<void> | undefined;
  let schemaTimer: NodeJS.Timeout | undefined;
  let outdated = false;

  function finish(claim: Claim, state: Finished['update']['state'], p: { next?: Date; status: number | null; error: string | null; attempt: Finished['attempt'] }): Finished {
    return {
      endpointId: claim.endpoint_id,
      attempt: p.attempt,
      update: { id: claim.id, leaseToken: claim.lease_token, state, nextAttemptAt: p.next ?? clock(), lastStatus: p.status, lastError: p.error },
    };
  }

  /**
   * One claimed delivery's request, from its send to its answer: the claim
   * and what the attempt's log entry needs, in the one object undici holds
   * while the request waits for a connection (see Flight).
   */
  class DeliveryFlight extends Flight {
    constructor(
      readonly claim: Claim,
      readonly report: TickReport | undefined,
      readonly startedAt: Date,
      readonly attemptId: string,
      readonly signature: string,
    ) {
      super();
    }
    protected landed(sent: SendResult): void {
      flights.delete(this);
      let finished: Finished | undefined;
      try {
        finished = outcomeOf(this, sent);
      } catch (err) {
        deps.log?.error({ err, delivery: this.claim.id }, 'attempt crashed; the lease will expire and it will be retried');
      }
      answered(this.claim, finished, this.report);
    }
  }

  /** What became of a delivery, given the answer to its attempt. */
  function outcomeOf(flight: DeliveryFlight, sent: SendResult): Finished {
    const { claim } = flight;
    const outcome = classifyOutcome(sent.result);
    let state: Finished['update']['state'] = outcome.verdict === 'success' ? 'succeeded' : 'failed';
    let next: Date | undefined;
    let error = outcome.error;
    if (outcome.verdict === 'retry') {
      const now = clock();
      const aborted = sent.result.stage === 'transport' && sent.result.kind === 'aborted';
      const retryAfterMs = sent.result.stage === 'response' ? parseRetryAfter(sent.result.retryAfter, now) : undefined;
      // A shutdown is not the receiver's fault: due again at once, for another worker.
      next = aborted && claim.attempts < maxAttempts ? now : (nextAttemptAt({ attempt: claim.attempts, now, random, schedule: config.retry, retryAfterMs }) ?? undefined);
      if (next) state = 'pending';
      else error = `${error}; gave up after ${maxAttempts} attempts`;
    }
    const attemptOutcome: AttemptOutcome = state === 'pending' ? 'retrying' : (state as AttemptOutcome);
    return finish(claim, state, {
      next,
      status: outcome.status,
      error,
      attempt: {
        id: flight.attemptId,
        accountId: claim.account_id,
        endpointId: claim.endpoint_id,
        deliveryId: claim.id,
        eventId: claim.event_id,
        eventType: claim.type,
        attemptNumber: claim.attempts,
        isTest: false,
        startedAt: flight.startedAt,
        durationMs: sent.durationMs,
        statusCode: outcome.status,
        outcome: attemptOutcome,
        error,
        url: claim.url,
        signature: flight.signature,
        responseExcerpt: sent.excerpt,
        testBody: null,
      },
    });
  }

  /**
   * Takes a claimed delivery (already counted in `inFlight`): sends it, or,
   * when there is nothing to send (out of attempts, endpoint disabled),
   * settles it at once. Callbacks, not an async function per delivery: most
   * deliveries wait in undici's queue, and whatever waits with them is
   * garbage that outlives a collection.
   */
  function launch(claim: Claim, report?: TickReport): void {
    inFlightByEndpoint.set(claim.endpoint_id, (inFlightByEndpoint.get(claim.endpoint_id) ?? 0) + 1);
    awaitingAnswer += 1;
    if (claim.exhausted) {
      return answered(claim, finish(claim, 'failed', { status: null, error: `gave up after ${maxAttempts} attempts: the worker sending the last one stopped before it finished`, attempt: null }), report);
    }
    if (!claim.enabled) return answered(claim, finish(claim, 'skipped', { status: null, error: 'endpoint disabled', attempt: null }), report);
    let flight: DeliveryFlight;
    let headers: Record<string, string>;
    try {
      const startedAt = clock();
      const attemptId = uuidV7(startedAt.getTime());
      headers = buildRequestHeaders({
        eventType: claim.type,
        eventId: claim.event_id,
        attemptId,
        timestamp: unixSeconds(startedAt),
        body: claim.body,
        secret: secretOf(claim),
      });
      flight = new DeliveryFlight(claim, report, startedAt, attemptId, signatureOf(headers));
    } catch (err) {
      deps.log?.error({ err, delivery: claim.id }, 'attempt crashed; the lease will expire and it will be retried');
      return answered(claim, undefined, report);
    }
    flights.add(flight);
    flight.send(agent, { url: claim.url, headers, body: claim.body, timeoutMs: config.requestTimeoutMs });
  }

  /**
   * A delivery's answer is in (or there was nothing to send). Two slots,
   * released at different moments. The endpoint's slot limits requests to
   * one receiver, so it is free now. The global slot bounds the leases this
   * worker holds (and so the duplicates if it dies), so it is held until the
   * result is written. Without a result (the attempt crashed) the lease runs
   * out and the delivery is claimed again.
   */
  function answered(claim: Claim, finished: Finished | undefined, report: TickReport | undefined): void {
    awaitingAnswer -= 1;
    const n = (inFlightByEndpoint.get(claim.endpoint_id) ?? 1) - 1;
    if (n === 0) inFlightByEndpoint.delete(claim.endpoint_id);
    else inFlightByEndpoint.set(claim.endpoint_id, n);
    released(n + 1 >= config.endpointConcurrency);
    if (!finished) return written(undefined, report);
    recorder.add(finished, () => written(finished, report));
  }

  function written(finished: Finished | undefined, report: TickReport | undefined): void {
    if (report && finished) {
      const s = finished.update.state;
      if (s === 'succeeded') report.succeeded += 1;
      else if (s === 'pending') report.retrying += 1;
      else if (s === 'failed') report.failed += 1;
      else report.skipped += 1;
    }
    inFlight -= 1;
    if (inFlight === 0 && settledWaiters.length > 0) {
      const waiters = settledWaiters;
      settledWaiters = [];
      for (const w of waiters) w();
    }
    released(false);
  }

  /** Resolves once every claimed delivery has its result written. */
  function settled(): Promise<void> {
    if (inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => settledWaiters.push(resolve));
  }

  async function claimAndLaunch(limit: number, report?: TickReport): Promise<number> {
    if (outdated) return 0;
    const claims = await claimDue(db, {
      now: clock(),
      limit,
      leaseMs: config.leaseMs,
      maxAttempts,
      endpointCap: config.endpointConcurrency,
      inFlightByEndpoint,
    });
    // Counted in flight all at once, so that nothing waiting for the worker
    // to settle (a shutdown, a tick) sees it idle between two slices.
    inFlight += claims.length;
    let slice = 0;
    for (const claim of claims) {
      if (slice >= LAUNCH_SLICE_BYTES) {
        slice = 0;
        await new Promise((resolve) => setImmediate(resolve));
      }
      launch(claim, report);
      slice += claim.body.length;
    }
    return claims.length;
  }

  /**
   * What the endpoints this worker is sending to have room for. A claim asks
   * for that and one endpoint's cap more (more claims follow while they come
   * back full): sized by the global room instead, it read and ranked some 25
   * due rows for each one it took, when every endpoint was near its cap.
   */
  function knownRoom(): number {
    return inFlightByEndpoint.size * config.endpointConcurrency - awaitingAnswer;
  }

  async function pump(): Promise<void> {
    try {
      do {
        wakeAgain = false;
        for (;;) {
          const room = Math.min(config.concurrency - inFlight, 500, knownRoom() + config.endpointConcurrency);
          if (!running || outdated || room <= 0) {
            lastClaimShort = false;
            break;
          }
          // This claim answers whatever a linger was waiting for.
          clearTimeout(lingerTimer);
          lingerTimer = undefined;
          const got = await claimAndLaunch(room);
          lastClaimShort = got < room;
          if (lastClaimShort) break;
        }
      } while (wakeAgain && running);
      // With work in flight, its completion wakes us; only an idle worker needs
      // to look up when the next retry comes due (one query fewer per claim under load).
      if (running && inFlight === 0) await scheduleNextWake();
      else if (running) armTimer(config.pollMs);
    } catch (err) {
      deps.log?.error({ err }, 'claiming deliveries failed; trying again shortly');
      // Nothing is known about what is due: answers claim at once again.
      lastClaimShort = false;
      if (running) armTimer(config.pollMs);
    }
  }

  async function scheduleNextWake(): Promise<void> {
    const wait = (await nextDueIn(db, clock())) ?? config.pollMs;
    armTimer(Math.max(0, Math.min(wait, config.pollMs)));
  }

  function armTimer(ms: number): void {
    clearTimeout(timer);
    timer = setTimeout(wake, ms);
    timer.unref();
  }

  /**
   * A slot came free: at the end of an answer (the endpoint's) or of a
   * written result (the worker's). After a short claim nothing is known to
   * be waiting for it, so it lingers (SHORT_CLAIM_LINGER_MS), unless the
   * endpoint was at its cap or the worker has nothing left in flight (then
   * it looks up the next due time at once).
   */
  function released(endpointWasAtCap: boolean): void {
    if (!lastClaimShort || endpointWasAtCap || inFlight === 0) return wake();
    if (!running || lingerTimer) return;
    lingerTimer = setTimeout(() => {
      lingerTimer = undefined;
      wake();
    }, SHORT_CLAIM_LINGER_MS);
    lingerTimer.unref();
  }

  function wake(): void {
    if (!running || outdated) return;
    if (pumping) {
      wakeAgain = true;
      return;
    }
    pumping = true;
    // Start on the next turn of the event loop: the answers and notifications
    // that land in this turn then share one claim instead of one claim each.
    void new Promise((r) => setImmediate(r)).then(pump).finally(() => {
      pumping = false;
      if (wakeAgain && running) wake();
    });
  }

  async function checkSchema(): Promise<boolean> {
    if (outdated) return false;
    try {
      await assertSchemaKnown(db);
      return true;
    } catch (err) {
      if (!(err instanceof SchemaTooNewError)) throw err;
      outdated = true;
      clearTimeout(timer);
      clearTimeout(lingerTimer);
      deps.log?.error({ schema: err.applied, known: err.known }, `${err.message}. This worker stops claiming; what it has in flight still finishes`);
      return false;
    }
  }

  // One prune at a time: the timer's, tests' and shutdown's runs queue
  // behind each other (two at once could lock the same rows in turn).
  let pruning: Promise<unknown> = Promise.resolve();
  // Per endpoint, the start time of the oldest attempt the last run kept.
  let cutoffs = new Map<string, Date>();
  let fullPruneAt = clock().getTime();
  function prune(options: { full?: boolean } = {}): Promise<number> {
    const run = pruning.then(async () => {
      let ids = recorder.takeTouched();
      const now = clock().getTime();
      const since = new Map<string, Date>();
      // A clock set back counts as a minute gone by.
      if (options.full || now - fullPruneAt >= FULL_PRUNE_EVERY_MS || now < fullPruneAt) {
        // Every endpoint remembered as well as those sent to since the last
        // run: a late attempt of one that has gone quiet is taken now. Then
        // they are forgotten; the next run of each takes its whole log.
        ids = [...new Set([...ids, ...cutoffs.keys()])];
        cutoffs = new Map();
        fullPruneAt = now;
      } else {
        for (const id of ids) {
          const cutoff = cutoffs.get(id);
          if (cutoff) since.set(id, new Date(cutoff.getTime() - PRUNE_MARGIN_MS));
        }
      }
      try {
        return await pruneAttempts(db, ids, ATTEMPTS_KEPT, { since, cutoffs });
      } catch (err) {
        // Their attempts are still there: the next run tries them again.
        recorder.retouch(ids);
        throw err;
      }
    });
    pruning = run.catch(() => undefined);
    return run;
  }

  async function shutdown(graceMs: number): Promise<void> {
    running = false;
    // Results from here on are written at once: nothing is gained by waiting for company.
    recorder.eager();
    clearTimeout(timer);
    clearTimeout(lingerTimer);
    clearInterval(pruneTimer);
    clearInterval(schemaTimer);
    await unlisten?.();
    unlisten = undefined;
    const all = settled();
    let graceTimer: NodeJS.Timeout | undefined;
    const expired = await Promise.race([
      all.then(() => false),
      new Promise<boolean>((r) => {
        graceTimer = setTimeout(() => r(true), graceMs);
      }),
    ]);
    clearTimeout(graceTimer);
    if (expired) {
      for (const f of flights) f.abort();
      // Requests still queued for a connection were never sent. Undici can
      // end them only once it hands them one (onConnect), and the aborts
      // above just closed the connections: it would open a new one for each
      // of them, only for it to be dropped. Destroying the agent ends them
      // now, as aborted.
      await agent.destroy();
      await all;
    }
    await recorder.idle();
    await prune({ full: true }).catch(() => 0);
    if (!expired) await agent.close();
  }

  return {
    get inFlight() {
      return inFlight;
    },
    async start() {
      running = true;
      unlisten = await db.listen(DELIVERIES_CHANNEL, wake);
      // Every second, so that no run is large (every 10 s, a run took up to
      // half a second of the database: BENCHMARKS.md, ninth and tenth
      // sessions). A run still going when the next is due is not doubled.
      let timerRun: Promise<unknown> | undefined;
      pruneTimer = setInterval(() => {
        timerRun ??= prune()
          .catch((err) => deps.log?.error({ err }, 'pruning attempts failed'))
          .finally(() => (timerRun = undefined));
      }, PRUNE_EVERY_MS);
      pruneTimer.unref();
      schemaTimer = setInterval(() => void checkSchema().catch((err) => deps.log?.error({ err }, 'checking the schema version failed')), SCHEMA_CHECK_EVERY_MS);
      schemaTimer.unref();
      wake();
    },
    stop(graceMs = 15_000) {
      stopping ??= shutdown(graceMs);
      return stopping;
    },
    async tick() {
      const report: TickReport = { claimed: 0, succeeded: 0, retrying: 0, failed: 0, skipped: 0 };
      const release = recorder.eager();
      try {
        report.claimed = await claimAndLaunch(Math.max(0, config.concurrency - inFlight), report);
        await settled();
        await recorder.idle();
      } finally {
        release();
      }
      return report;
    },
    pruneAttempts: () => prune(),
    checkSchema,
  };
}
