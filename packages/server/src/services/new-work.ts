import type { Db } from '../storage/db.ts';
import { notifyDeliveries } from '../storage/queries/deliveries.ts';

/**
 * Wakes idle dispatchers after new deliveries were committed.
 *
 * Why not NOTIFY inside the publishing transaction: PostgreSQL holds a global
 * lock on its notification queue from just before commit until after it, WAL
 * flush included, so every notifying commit waits for the previous one's
 * flush. (Its effect could not be separated from noise in our benchmark; the
 * ~650 events/s cap first blamed on it was the benchmark's own pacing.)
 * A NOTIFY sent alone writes no WAL, and pokes that arrive while one is in
 * flight are folded into a single follow-up, so a burst costs two at most.
 * Nothing is lost if a notification is: the dispatchers also poll.
 */
const notifiers = new WeakMap<Db, () => void>();

export function announceNewWork(db: Db, onError?: (err: unknown) => void): void {
  let poke = notifiers.get(db);
  if (!poke) {
    let sending = false;
    let again = false;
    const send = async () => {
      sending = true;
      try {
        do {
          again = false;
          await notifyDeliveries(db);
        } while (again);
      } catch (err) {
        onError?.(err);
      } finally {
        sending = false;
      }
    };
    poke = () => {
      if (sending) again = true;
      else void send();
    };
    notifiers.set(db, poke);
  }
  poke();
}
