import type { Db } from '../storage/db.ts';
import { getEventTypes, type EventTypeRow } from '../storage/queries/event-types.ts';

/**
 * Event types are never changed once stored (built-ins are refreshed only by
 * `prepareDatabase`, before anything is served), so a type once found can be
 * remembered for the life of the database handle: one query fewer on every
 * publish. A name not found is always looked up again, so a type an operator
 * adds is usable at once.
 */
const known = new WeakMap<Db, Map<string, EventTypeRow>>();

export async function catalogTypes(db: Db, names: readonly string[]): Promise<Map<string, EventTypeRow>> {
  let cache = known.get(db);
  if (!cache) known.set(db, (cache = new Map()));
  const missing = names.filter((n) => !cache.has(n));
  if (missing.length > 0) for (const row of await getEventTypes(db, missing)) cache.set(row.name, row);
  return new Map(names.flatMap((n) => (cache.has(n) ? [[n, cache.get(n)!] as const] : [])));
}
