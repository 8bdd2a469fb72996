import type { Db } from '../storage/db.ts';
import { getEventTypes, type EventTypeRow } from '../storage/queries/event-types.ts';

/**
 * Event types are never changed once stored (built-ins are refreshed only by
 * `prepareDatabase`, before anything is served), so a type once found can be
 * remembered for the life of the database handle: one query fewer on every
 * publish. A name not found is always looked up again, so a type an operator
 * adds is usable at once.
 */
export class EventCatalog {
  private readonly known = new Map<string, EventTypeRow>();

  constructor(private readonly db: Db) {}

  async types(names: readonly string[]): Promise<Map<string, EventTypeRow>> {
    const missing = names.filter((n) => !this.known.has(n));
    if (missing.length > 0) for (const row of await getEventTypes(this.db, missing)) this.known.set(row.name, row);
    return new Map(names.flatMap((n) => (this.known.has(n) ? [[n, this.known.get(n)!] as const] : [])));
  }
}
