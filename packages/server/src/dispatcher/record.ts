import type { Db } from '../storage/db.ts';
import type { DeliveryState } from '../storage/queries/deliveries.ts';
import { recordResults, type AttemptRecord, type DeliveryResult } from '../storage/queries/record-results.ts';

/** A delivery's new state, in this dispatcher's older shape (see `toResult`). */
export interface DeliveryUpdate {
  id: string;
  leaseToken: number;
  state: DeliveryState;
  nextAttemptAt: Date;
  lastStatus: number | null;
  lastError: string | null;
}

/** One finished piece of work: the delivery's new state and, if a request was sent, its attempt. */
export interface Finished {
  update: DeliveryUpdate;
  endpointId: string;
  attempt: AttemptRecord | null;
}

export interface RecorderOptions {
  db: Db;
  disableAfter: number;
  now: () => Date;
  onDisabled?: (endpointIds: string[]) => void;
  onError?: (err: unknown) => void;
  /**
   * How long a batch smaller than LINGER_BATCH waits for company before it is
   * written (0: the next turn of the event loop). A result's write is not on
   * the receiver's path, so waiting costs no delivery latency; the delivery
   * keeps its global slot and lease, and its attempt shows up, that much later.
   */
  lingerMs?: number;
}

/** A batch this large is written without lingering. */
const LINGER_BATCH = 64;

/**
 * Records results in batches (group commit): while one batch is being written,
 * new results queue up and go in the next. Each batch is one statement,
 * whatever its size (`recordResults`). A failed write is retried; the results
 * stay queued meanwhile, and writing a batch twice changes nothing.
 */
export function createRecorder(options: RecorderOptions) {
  let queue: Array<{ finished: Finished; done: () => void }> = [];
  let flushing: Promise<void> | undefined;
  const touched = new Set<string>();
  const lingerMs = options.lingerMs ?? 0;
  // Cuts a linger short: idle() wants everything written now.
  let hurry: (() => void) | undefined;
  let urgent = 0;

  function linger(): Promise<void> {
    if (lingerMs <= 0 || urgent > 0 || queue.length >= LINGER_BATCH) return new Promise((r) => setImmediate(r));
    return new Promise((r) => {
      const t = setTimeout(done, lingerMs);
      function done() {
        clearTimeout(t);
        hurry = undefined;
        r();
      }
      hurry = done;
    });
  }

  function eager(): () => void {
    urgent += 1;
    hurry?.();
    let released = false;
    return () => {
      if (!released) urgent -= 1;
      released = true;
    };
  }

  // A bridge to the storage layer's results, kept until the dispatcher is
  // rewritten against them directly.
  function toResult(f: Finished, now: Date): DeliveryResult {
    const u = f.update;
    const outcome = u.state === 'pending' ? (f.attempt ? 'retry' : 'given_back') : u.state;
    return {
      deliveryId: u.id,
      leaseToken: u.leaseToken,
      endpointId: f.endpointId,
      outcome,
      retryInMs: outcome === 'retry' ? Math.max(0, u.nextAttemptAt.getTime() - now.getTime()) : null,
      status: u.lastStatus,
      error: u.lastError,
      throttle: null,
      attempt: f.attempt,
    };
  }

  async function writeBatch(batch: Finished[]): Promise<void> {
    const now = options.now();
    const { disabled } = await recordResults(options.db, {
      results: batch.map((f) => toResult(f, now)),
      now,
      disableAfter: options.disableAfter,
      endpointCap: Number.MAX_SAFE_INTEGER,
    });
    for (const f of batch) touched.add(f.endpointId);
    if (disabled.length > 0) options.onDisabled?.(disabled);
  }

  async function drain(): Promise<void> {
    let failures = 0;
    while (queue.length > 0) {
      // Let pending I/O land first (PGlite runs queries on this thread, so
      // without a turn of the event loop results would go one at a time),
      // and let a small batch wait for company. Under a burst batches are
      // large anyway; at a steady 1,000 deliveries/s a 20 ms linger wrote
      // 3 to 4 % less CPU for the whole machine (three interleaved runs each).
      await linger();
      const batch = queue.slice(0, 1000);
      try {
        await writeBatch(batch.map((q) => q.finished));
        queue = queue.slice(batch.length);
        for (const q of batch) q.done();
        failures = 0;
      } catch (err) {
        options.onError?.(err);
        failures += 1;
        if (failures >= 5) throw err;
        await new Promise((r) => setTimeout(r, 100 * 2 ** failures));
      }
    }
  }

  function add(finished: Finished, done: () => void): void {
    queue.push({ finished, done });
    if (queue.length >= LINGER_BATCH) hurry?.();
    // A flush under way takes it too (drain() runs until the queue is empty,
    // and flush() starts again if anything came in after that).
    if (!flushing) void flush().catch((err) => options.onError?.(err));
  }

  function flush(): Promise<void> {
    flushing ??= drain().finally(() => {
      flushing = undefined;
      if (queue.length > 0) void flush().catch(options.onError);
    });
    return flushing;
  }

  return {
    /** Queues a result; resolves once it is written. */
    push(finished: Finished): Promise<void> {
      return new Promise<void>((done) => add(finished, done));
    },
    /** Queues a result; `done` is called once it is written (the dispatcher's way: no promise per result). */
    add,
    /** Resolves when everything pushed so far is written (without lingering). */
    async idle(): Promise<void> {
      const release = eager();
      try {
        while (flushing || queue.length > 0) await (flushing ?? flush());
      } finally {
        release();
      }
    },
    /** Writes without lingering until the returned function is called (tick(), shutdown). */
    eager,
    /** Endpoints with new attempts since the last call (for pruning). */
    takeTouched(): string[] {
      const ids = [...touched];
      touched.clear();
      return ids;
    },
    /** Gives back endpoints taken by takeTouched whose pruning failed, for the next run. */
    retouch(ids: readonly string[]): void {
      for (const id of ids) touched.add(id);
    },
  };
}

export type Recorder = ReturnType<typeof createRecorder>;
