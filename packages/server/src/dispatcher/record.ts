import type { DeliveryResult } from '../storage/queries/record-results.ts';

export interface Logger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

/** Writes one batch of results (`recordResults`); says which leases still held and which endpoints it disabled. */
export type WriteResults = (results: readonly DeliveryResult[]) => Promise<{ applied: Set<string>; disabled: string[] }>;

/**
 * What became of a result: written while its lease held, written after the
 * lease ran out (fenced out: the delivery is another worker's now), or given
 * up unwritten at shutdown (the lease then runs out and the delivery is sent again).
 */
export type Written = 'applied' | 'late' | 'unwritten';

/** The most results one write takes. */
const BATCH_MAX = 1000;
const RETRY_FIRST_MS = 100;
const RETRY_MAX_MS = 5_000;

/**
 * Writes results in batches (group commit): while one batch is being
 * written, new results queue up, and the next write takes all of them. A
 * write that fails is retried, with a back-off capped at 5 s, for as long as
 * it takes: results wait in memory meanwhile and none is dropped. Only
 * `close()` (the end of a shutdown) gives up what is still unwritten.
 */
export function createRecorder(options: { write: WriteResults; log?: Logger }) {
  let queue: Array<{ result: DeliveryResult; done: (w: Written) => void }> = [];
  let writing: Promise<void> | undefined;
  let closed = false;
  let cutWaitShort: (() => void) | undefined;

  function wait(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        cutWaitShort = undefined;
        resolve();
      }
      cutWaitShort = done;
    });
  }

  async function drain(): Promise<void> {
    let failures = 0;
    while (queue.length > 0 && !closed) {
      // Let the answers that land in this turn of the event loop join the batch.
      await new Promise((resolve) => setImmediate(resolve));
      const batch = queue.slice(0, BATCH_MAX);
      try {
        const { applied, disabled } = await options.write(batch.map((q) => q.result));
        // Only appends happened meanwhile: the batch is still the queue's head.
        queue = queue.slice(batch.length);
        failures = 0;
        if (disabled.length > 0) options.log?.warn({ endpoints: disabled }, 'endpoint disabled after too many consecutive failed deliveries');
        for (const q of batch) q.done(applied.has(q.result.deliveryId) ? 'applied' : 'late');
      } catch (err) {
        failures += 1;
        options.log?.error({ err, waiting: queue.length }, 'recording delivery results failed; retrying');
        await wait(Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** (failures - 1)));
      }
    }
  }

  function flush(): void {
    // A result queued as the last write ended starts the next one.
    writing ??= drain().finally(() => {
      writing = undefined;
      if (queue.length > 0 && !closed) flush();
    });
  }

  return {
    /** Queues a result; resolves once it is written (or given up at close). */
    add(result: DeliveryResult): Promise<Written> {
      if (closed) return Promise.resolve('unwritten');
      return new Promise<Written>((done) => {
        queue.push({ result, done });
        flush();
      });
    },
    /** Results queued and not yet written. */
    get waiting(): number {
      return queue.length;
    },
    /** Stops writing: results still queued are given up ('unwritten'). */
    close(): void {
      closed = true;
      cutWaitShort?.();
      for (const q of queue.splice(0)) q.done('unwritten');
    },
  };
}

export type Recorder = ReturnType<typeof createRecorder>;
