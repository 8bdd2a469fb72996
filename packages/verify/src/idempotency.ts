/**
 * Herald delivers at least once: the same event can arrive again (a retry
 * after a timeout whose request did get through, a redelivery from the panel).
 * The event id (`X-Service-Event-ID`, the envelope's `id`) stays the same
 * across all of them, so a receiver remembers the ids it has processed and
 * skips repeats.
 *
 * Both methods may be sync or async, so a store can sit on a Map, Redis or a
 * SQL table (the README has a recipe for one).
 */
export interface IdempotencyStore {
  /** True when this event id was remembered before. */
  seen(eventId: string): boolean | Promise<boolean>;
  /** Records the event id as processed. Call it after the work succeeded, so a failure is retried. */
  remember(eventId: string): void | Promise<void>;
}

export interface MemoryIdempotencyStoreOptions {
  /** How many event ids to keep; the least recently used is dropped first. */
  max: number;
}

/**
 * An in-memory {@link IdempotencyStore} that keeps the `max` most recently
 * used event ids (a lookup that hits counts as a use). Right for one process
 * and for tests; it forgets on restart and is not shared between instances,
 * so several replicas need a shared store (see the README's SQL recipe).
 *
 * @example
 * const processed = new MemoryIdempotencyStore({ max: 10_000 });
 *
 * const event = await verify({ body, headers, secret });
 * if (await processed.seen(event.id)) return new Response(null, { status: 204 });
 * await handle(event);
 * await processed.remember(event.id);
 */
export class MemoryIdempotencyStore implements IdempotencyStore {
  readonly #max: number;
  // A Map iterates in insertion order; re-inserting on use keeps the least
  // recently used id first, so eviction is deleting the first key.
  readonly #ids = new Map<string, true>();

  constructor({ max }: MemoryIdempotencyStoreOptions) {
    if (!Number.isSafeInteger(max) || max < 1) {
      throw new RangeError(`max must be a positive integer (how many event ids to keep); got ${String(max)}`);
    }
    this.#max = max;
  }

  seen(eventId: string): boolean {
    if (!this.#ids.has(eventId)) return false;
    this.#touch(eventId);
    return true;
  }

  remember(eventId: string): void {
    this.#touch(eventId);
    if (this.#ids.size > this.#max) this.#ids.delete(this.#ids.keys().next().value!);
  }

  /** How many event ids are held (at most `max`). */
  get size(): number {
    return this.#ids.size;
  }

  #touch(eventId: string): void {
    this.#ids.delete(eventId);
    this.#ids.set(eventId, true);
  }
}
