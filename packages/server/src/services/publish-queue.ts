import type { Db } from '../storage/db.ts';
import { eventKey, insertEventsWithDeliveries, type NewEvent } from '../storage/queries/events.ts';
import type { NewWork } from './new-work.ts';

/** Statements of single publishes in flight at once, per queue (one per process). */
export const PUBLISH_STATEMENTS_IN_FLIGHT = 2;
/** Most events written by one statement (the batch API's own limit). */
export const PUBLISH_ROWS_PER_STATEMENT = 500;
/** Most body bytes in one statement (a statement always takes at least one event, whatever its size). */
export const PUBLISH_BYTES_PER_STATEMENT = 4 * 1024 * 1024;

interface Waiting {
  event: NewEvent;
  resolve(inserted: boolean): void;
  reject(err: unknown): void;
}

/**
 * Group commit for single-event publishes. Each one is written on the event
 * loop's next turn when a statement slot is free, with those added by then,
 * so an idle Herald adds no wait beyond that turn; while the slots are busy,
 * publishes queue, and the next free slot writes all of them (of any
 * accounts) in one statement and one commit. Under load that divides the
 * statements, commits and WAL flushes per event by the number waiting.
 *
 * Each caller still gets its answer only after its own row is committed. If
 * a shared statement fails on its data, every event in it is written again
 * alone, one after another, so one event's error (an account deleted
 * meanwhile, say) is reported to its own publisher and costs the others
 * nothing. An error of the connection or the server fails them all at once.
 * A statement takes at most 500 events and 4 MiB of bodies.
 */
export class PublishQueue {
  private readonly waiting: Waiting[] = [];
  private inFlight = 0;
  private pumpScheduled = false;

  constructor(
    private readonly db: Db,
    private readonly newWork: NewWork,
    private readonly options: {
      inFlight?: number;
      rowsPerStatement?: number;
      bytesPerStatement?: number;
      /** When the deliveries come due (`databaseTime`): the database's now unless given. */
      now?: () => Date | null;
    } = {},
  ) {}

  /** Resolves once the event is stored: true when it was inserted, false when its id was stored before. */
  add(event: NewEvent): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ event, resolve, reject });
      this.schedulePump();
    });
  }

  /**
   * Writes on the event loop's next turn, not at once: the requests already
   * read from the sockets by then join the statement. On the embedded engine
   * the database runs on this thread, so while it writes no request is read;
   * written at once, each publish took its own statement.
   */
  private schedulePump(): void {
    if (this.pumpScheduled) return;
    this.pumpScheduled = true;
    setImmediate(() => {
      this.pumpScheduled = false;
      this.pump();
    });
  }

  private pump(): void {
    while (this.inFlight < (this.options.inFlight ?? PUBLISH_STATEMENTS_IN_FLIGHT) && this.waiting.length > 0) {
      const batch = this.waiting.splice(0, this.takeable());
      this.inFlight += 1;
      void this.write(batch).finally(() => {
        this.inFlight -= 1;
        this.schedulePump();
      });
    }
  }

  /** How many of the waiting events the next statement takes: within the row and byte limits, at least one. */
  private takeable(): number {
    const rows = Math.min(this.waiting.length, this.options.rowsPerStatement ?? PUBLISH_ROWS_PER_STATEMENT);
    const budget = this.options.bytesPerStatement ?? PUBLISH_BYTES_PER_STATEMENT;
    let bytes = 0;
    for (let n = 0; n < rows; n++) {
      bytes += this.waiting[n]!.event.body.length;
      if (bytes > budget) return Math.max(1, n);
    }
    return rows;
  }

  private async write(batch: Waiting[]): Promise<void> {
    let result: Awaited<ReturnType<typeof insertEventsWithDeliveries>>;
    try {
      result = await insertEventsWithDeliveries(
        this.db,
        batch.map((w) => w.event),
        this.options.now?.() ?? null,
      );
    } catch (err) {
      if (batch.length === 1 || !aboutRows(err)) {
        for (const w of batch) w.reject(err);
        return;
      }
      // Each alone, one after another (within this statement's slot), so the
      // error reaches only the publisher whose event caused it.
      for (const w of batch) await this.write([w]);
      return;
    }
    // After commit, so a woken dispatcher finds the rows.
    if (result.pending > 0) this.newWork.announce();
    // The same id twice in one statement (two publishers racing): the first
    // to arrive is the one stored (the statement's sort is stable), the later
    // ones are told it was there before, so their bodies are compared with it
    // (a replay, or a 409), never dropped.
    const seen = new Set<string>();
    for (const w of batch) {
      const key = eventKey(w.event.accountId, w.event.id);
      w.resolve(result.inserted.has(key) && !seen.has(key));
      seen.add(key);
    }
  }
}

/**
 * Whether an error may be about some rows only, so that writing them one by
 * one can save the others. A lost connection, a server shutting down or out of
 * resources fails every statement alike: retrying 500 of them would only
 * flood the pool.
 */
function aboutRows(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  if (typeof code !== 'string' || code.length !== 5) return false;
  return !/^(08|53|57|58|XX)/.test(code);
}
