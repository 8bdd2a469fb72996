import type { Db } from '../storage/db.ts';
import type { DeliveryState } from '../storage/queries/deliveries.ts';
import {
  applyStreaks,
  insertAttempts,
  skipPendingDeliveries,
  updateDeliveries,
  type AttemptRecord,
  type DeliveryUpdate,
  type StreakChange,
} from '../storage/queries/record-results.ts';

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
}

/** Folds a batch's final states, in completion order, into one streak change per endpoint. */
export function streakChanges(applied: ReadonlyArray<{ endpointId: string; state: DeliveryState; error: string | null }>): StreakChange[] {
  const byEndpoint = new Map<string, StreakChange>();
  for (const a of applied) {
    if (a.state !== 'succeeded' && a.state !== 'failed') continue;
    const c = byEndpoint.get(a.endpointId) ?? { endpointId: a.endpointId, reset: false, failuresAfter: 0, lastError: null };
    if (a.state === 'succeeded') {
      c.reset = true;
      c.failuresAfter = 0;
    } else {
      c.failuresAfter += 1;
      c.lastError = a.error;
    }
    byEndpoint.set(a.endpointId, c);
  }
  return [...byEndpoint.values()];
}

/**
 * Records results in batches (group commit): while one batch is being written,
 * new results queue up and go in the next. Each batch is one transaction of a
 * few multi-row statements, whatever its size. A failed write is retried; the
 * results stay queued meanwhile.
 */
export function createRecorder(options: RecorderOptions) {
  let queue: Array<{ finished: Finished; done: () => void }> = [];
  let flushing: Promise<void> | undefined;
  const touched = new Set<string>();

  async function writeBatch(batch: Finished[]): Promise<void> {
    const now = options.now();
    const disabled = await options.db.transaction(async (tx) => {
      await insertAttempts(tx, batch.flatMap((f) => (f.attempt ? [f.attempt] : [])));
      const applied = new Set((await updateDeliveries(tx, batch.map((f) => f.update), now)).map((r) => r.id));
      const finals = batch
        .filter((f) => applied.has(f.update.id))
        .map((f) => ({ endpointId: f.endpointId, state: f.update.state, error: f.update.lastError }));
      const off = await applyStreaks(tx, streakChanges(finals), { threshold: options.disableAfter, now });
      await skipPendingDeliveries(tx, off, now);
      return off;
    });
    for (const f of batch) touched.add(f.endpointId);
    if (disabled.length > 0) options.onDisabled?.(disabled);
  }

  async function drain(): Promise<void> {
    let failures = 0;
    while (queue.length > 0) {
      // Let pending I/O land first: PGlite runs queries on this thread, so
      // without this turn of the event loop results would go one at a time.
      await new Promise((r) => setImmediate(r));
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
      const written = new Promise<void>((done) => queue.push({ finished, done }));
      void flush().catch((err) => options.onError?.(err));
      return written;
    },
    /** Resolves when everything pushed so far is written. */
    async idle(): Promise<void> {
      while (flushing || queue.length > 0) await (flushing ?? flush());
    },
    /** Endpoints with new attempts since the last call (for pruning). */
    takeTouched(): string[] {
      const ids = [...touched];
      touched.clear();
      return ids;
    },
  };
}

export type Recorder = ReturnType<typeof createRecorder>;
