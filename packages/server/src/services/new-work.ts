import type { Db } from '../storage/db.ts';
import { notifyDeliveries } from '../storage/queries/deliveries.ts';

/**
 * After a notification, pokes that arrive within this many milliseconds share
 * one follow-up notification at the end of the window.
 */
export const NOTIFY_WINDOW_MS = 10;

/**
 * Wakes idle dispatchers after new deliveries were committed.
 *
 * Why not NOTIFY inside the publishing transaction: PostgreSQL holds a global
 * lock on its notification queue from just before commit until after it, WAL
 * flush included, so every notifying commit waits for the previous one's
 * flush. (Its effect could not be separated from noise in our benchmark; the
 * ~650 events/s cap first blamed on it was the benchmark's own pacing.)
 * A NOTIFY sent alone writes only its commit record and does not wait for
 * the disk (a transaction that wrote nothing else commits asynchronously:
 * see RecordTransactionCommit).
 *
 * Still, each one is a statement and a commit on the API's connection, and a
 * wake-up and a claim in every idle dispatcher. At a steady 1,000 single
 * publishes a second the API sent one per publish statement (3,733 for 3,991
 * in the benchmark's steady phase, a third of all its statements). So the
 * first poke after a quiet spell notifies at once (an idle Herald still
 * delivers a fresh event within milliseconds), and the pokes made while it
 * is sent or in the NOTIFY_WINDOW_MS after share a single follow-up at the
 * end of the window.
 * A dispatcher that is busy also claims whenever a result of its own is
 * written. Nothing is lost if a notification is: the dispatchers also poll.
 */
export interface NewWork {
  /** After a commit that made deliveries due: wakes idle dispatchers (at once, or at the end of the window). */
  announce(): void;
}

/** The one announcer of a database handle (createServiceDeps builds it). */
export function newWorkAnnouncer(db: Db, onError?: (err: unknown) => void): NewWork {
  return { announce: coalescingNotifier(() => notifyDeliveries(db), NOTIFY_WINDOW_MS, onError) };
}

/**
 * A poke sends at once unless a send is under way or the window after the
 * last one is still open; then it is folded into one send when both are over.
 */
export function coalescingNotifier(send: () => Promise<void>, windowMs: number, onError?: (err: unknown) => void): () => void {
  let busy = false;
  let again = false;
  const run = async () => {
    busy = true;
    again = false;
    try {
      await send();
    } catch (err) {
      try {
        onError?.(err);
      } catch {
        /* a failing error handler must not leave the notifier busy for good */
      }
    } finally {
      const t = setTimeout(() => {
        busy = false;
        if (again) void run();
      }, windowMs);
      // A follow-up pending at exit is not worth keeping a process alive for: dispatchers poll.
      t.unref?.();
    }
  };
  return () => {
    if (busy) again = true;
    else void run();
  };
}
