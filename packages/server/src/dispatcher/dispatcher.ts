import { databaseTime } from '../core/clock.ts';
import { randomUUID } from 'node:crypto';
import type { ClaimedDelivery } from '../storage/queries/claim-deliveries.ts';
import type { ResultOutcome } from '../storage/queries/record-results.ts';
import { createAttempter } from './attempt.ts';
import type { DispatcherParts } from './parts.ts';
import { createRecorder, type Logger, type Written } from './record.ts';

export type { DispatcherParts, Logger };

/** The most deliveries one claim asks for. */
const CLAIM_MAX = 500;
/** Claims after a failed one wait this long, doubling up to CLAIM_RETRY_MAX_MS. */
const CLAIM_RETRY_FIRST_MS = 100;
const CLAIM_RETRY_MAX_MS = 5_000;
/**
 * With requests in flight, a wake-up waits this long before the next claim,
 * so that the answers of that time share one claim: a claim costs the
 * database about the same for one row as for fifty.
 */
const CLAIM_GATHER_MS = 5;
/** Once a stopping worker's attempts have ended, their results have this long to be written. */
const RESULTS_BOUND_MS = 5_000;
/**
 * Body bytes signed and sent before the event loop gets a turn: signing costs
 * about 0.6 ms per MiB, so one 1 MiB event to 500 endpoints would otherwise
 * hold the loop (and /healthz, and every answer) for 300 ms at once.
 */
const SLICE_BYTES = 8 * 1024 * 1024;

export interface TickReport {
  claimed: number;
  succeeded: number;
  retrying: number;
  failed: number;
  skipped: number;
  /** Handed back unsent or aborted: due again at once, no attempt spent. */
  givenBack: number;
  /** Results whose lease had run out when they were written: fenced out, so they changed nothing. */
  late: number;
}

export interface Dispatcher {
  /** Runs continuously: claims while it has room, and waits for new work, an answer, the next due time or the poll. */
  start(): Promise<void>;
  /** Stops claiming, lets attempts finish within `graceMs`, aborts the rest, writes the results within a bound. */
  stop(graceMs?: number): Promise<void>;
  /** One claim, its attempts and their results, awaited to the end. For tests and tools. */
  tick(): Promise<TickReport>;
  /** Stops claiming for good (a newer Herald migrated the database); what is in flight finishes. */
  pause(reason: string): void;
  /** Claimed deliveries whose result is not written yet. */
  readonly inFlight: number;
}

function within(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((r) => (timer = setTimeout(() => r(false), ms)));
  return Promise.race([p.then(() => true), late]).finally(() => clearTimeout(timer));
}

export function createDispatcher(parts: DispatcherParts): Dispatcher {
  const { config, clock, log } = parts;
  const recorder = createRecorder({ write: (results) => parts.record(results, databaseTime(clock)), log });
  // How to cut short each request being sent, for a shutdown (see SendRequest.cancels).
  const sending = new Set<() => void>();
  const attempt = createAttempter({ ...parts, random: parts.random ?? Math.random, cancels: sending });
  let inFlight = 0;
  let settledWaiters: Array<() => void> = [];
  let running = false;
  let stopping: Promise<void> | undefined;
  let paused = false;
  let looping: Promise<void> | undefined;
  let unlisten: (() => Promise<void>) | undefined;
  // A wake-up came in since the loop last looked: it claims again instead of waiting.
  let woken = false;
  let endWait: (() => void) | undefined;
  // Claims that failed on this side: the server may have committed them all
  // the same, leasing deliveries no one here will send. Each is given back
  // before the next claim, retried (with the claims' back-off) until it is.
  const unanswered: string[] = [];

  function wake(): void {
    woken = true;
    endWait?.();
  }

  /** Waits for a wake-up or `ms`, whichever comes first. */
  function waitForWake(ms: number): Promise<void> {
    if (woken || !running) return Promise.resolve();
    return new Promise((resolve) => {
      // Unreferenced: a worker waiting for work does not keep the process alive.
      const timer = setTimeout(done, ms).unref();
      function done() {
        clearTimeout(timer);
        endWait = undefined;
        resolve();
      }
      endWait = done;
    });
  }

  function count(report: TickReport, outcome: ResultOutcome, written: Written): void {
    if (written === 'late') report.late += 1;
    else if (written === 'unwritten') return;
    else if (outcome === 'retry') report.retrying += 1;
    else if (outcome === 'given_back') report.givenBack += 1;
    else report[outcome] += 1;
  }

  /** One claimed delivery, from its attempt to its written result; it then frees its slot and wakes the loop. */
  async function deliver(d: ClaimedDelivery, leaseSafeUntil: number, report?: TickReport): Promise<void> {
    try {
      const r = await attempt(d, leaseSafeUntil, stopping !== undefined);
      const written = await recorder.add(r);
      if (written === 'late') log?.warn({ delivery: d.id, outcome: r.outcome }, 'the lease ran out before the result was written; the delivery is another worker\'s now');
      if (report) count(report, r.outcome, written);
    } catch (err) {
      // Nothing is recorded: the lease runs out, and the delivery is sent again.
      log?.error({ err, delivery: d.id }, 'attempt crashed; the delivery is sent again once its lease runs out');
    } finally {
      inFlight -= 1;
      if (inFlight === 0) for (const w of settledWaiters.splice(0)) w();
      wake();
    }
  }

  /** Resolves once every claimed delivery has its result written (or given up). */
  function settled(): Promise<void> {
    return inFlight === 0 ? Promise.resolve() : new Promise((r) => settledWaiters.push(r));
  }

  /** Gives back the claims whose answers never came; throws (and keeps the rest) if the database still does not answer. */
  async function giveBackUnanswered(): Promise<void> {
    while (unanswered.length > 0) {
      await parts.giveBack(unanswered[0]!);
      unanswered.shift();
    }
  }

  /** Claims up to `limit` deliveries and starts each at once; returns how many it got. */
  async function claimAndStart(limit: number, report?: TickReport): Promise<number> {
    if (paused || limit <= 0) return 0;
    await giveBackUnanswered();
    // The lease is counted from before the claim: it cannot have started earlier.
    const claimedAt = performance.now();
    const claimId = randomUUID();
    let claimed: ClaimedDelivery[];
    try {
      claimed = await parts.claim({ limit, leaseMs: config.leaseMs, endpointCap: config.endpointConcurrency, originCap: config.originConcurrency, now: databaseTime(clock), claimId });
    } catch (err) {
      unanswered.push(claimId);
      throw err;
    }
    inFlight += claimed.length;
    let slice = 0;
    for (const d of claimed) {
      if (slice >= SLICE_BYTES) {
        slice = 0;
        await new Promise((r) => setImmediate(r));
      }
      void deliver(d, claimedAt + config.leaseMs, report);
      slice += d.body.length;
    }
    return claimed.length;
  }

  async function loop(): Promise<void> {
    let failures = 0;
    while (running && !paused) {
      woken = false;
      const room = Math.min(config.concurrency - inFlight, CLAIM_MAX);
      let waitMs = config.pollMs;
      try {
        const got = await claimAndStart(room);
        failures = 0;
        if (room > 0 && got === room) continue;
        // Idle: sleep until the next retry comes due (with work in flight, its end wakes the loop).
        if (inFlight === 0) waitMs = Math.min(config.pollMs, (await parts.nextDueIn(databaseTime(clock))) ?? config.pollMs);
      } catch (err) {
        failures += 1;
        waitMs = Math.min(CLAIM_RETRY_MAX_MS, CLAIM_RETRY_FIRST_MS * 2 ** (failures - 1));
        log?.error({ err }, 'claiming deliveries failed; trying again shortly');
      }
      await waitForWake(waitMs);
      if (inFlight > 0 && running) await new Promise((r) => setTimeout(r, CLAIM_GATHER_MS));
    }
  }

  async function shutdown(graceMs: number): Promise<void> {
    running = false;
    wake();
    const graceLeft = ((end) => () => Math.max(0, end - performance.now()))(performance.now() + graceMs);
    await within(unlisten?.().catch(() => {}) ?? Promise.resolve(), graceLeft());
    await within(looping ?? Promise.resolve(), graceLeft());
    if (!(await within(settled(), graceLeft()))) for (const cancel of sending) cancel();
    const resultsWritten = within(settled(), RESULTS_BOUND_MS);
    // Best effort: a claim not given back is reaped when its leases run out.
    await within(giveBackUnanswered().catch(() => {}), RESULTS_BOUND_MS);
    if (!(await resultsWritten)) log?.error({ unwritten: recorder.waiting }, 'results could not be written before shutdown; those deliveries are sent again once their leases run out');
    recorder.close();
  }

  return {
    get inFlight() {
      return inFlight;
    },
    async start() {
      running = true;
      unlisten = await parts.listen?.(wake);
      looping = loop();
    },
    stop(graceMs = 15_000) {
      stopping ??= shutdown(graceMs);
      return stopping;
    },
    async tick() {
      const report: TickReport = { claimed: 0, succeeded: 0, retrying: 0, failed: 0, skipped: 0, givenBack: 0, late: 0 };
      report.claimed = await claimAndStart(Math.min(config.concurrency - inFlight, CLAIM_MAX), report);
      await settled();
      return report;
    },
    pause(reason) {
      if (paused) return;
      paused = true;
      wake();
      log?.error({ reason }, 'this worker stops claiming deliveries; what it has in flight still finishes');
    },
  };
}
