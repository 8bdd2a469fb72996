import type { Queryable } from '../db.ts';
import type { DeliveryState } from './deliveries.ts';
import type { EventRow } from './events.ts';

/**
 * What an event search selects. Every field narrows it; none given is every
 * event of the account.
 *
 * An event's state toward an endpoint is the state of its newest delivery
 * to that endpoint (a replay or a resend adds a delivery, and the newest
 * says what became of the event there). `states` keeps the events whose
 * state toward some endpoint, or toward `endpointId` when given, is one of
 * them. `endpointId` alone keeps the events that have a delivery to it.
 */
export interface EventFilter {
  ids?: readonly string[];
  types?: readonly string[];
  since?: Date;
  until?: Date;
  endpointId?: string;
  states?: readonly DeliveryState[];
}

const COLUMNS = 'e.account_id, e.id, e.type, e.created_at, e.body, e.request_hash';

/**
 * The WHERE clause shared by the search, the count and the replay's walk,
 * with its parameters from $1 to $7. Deliveries are looked at only through
 * deliveries_event (account, event), one event at a time.
 */
function where(accountId: string, f: EventFilter): { sql: string; params: unknown[] } {
  return {
    sql: `e.account_id = $1
      AND ($2::uuid[] IS NULL OR e.id = ANY ($2::uuid[]))
      AND ($3::text[] IS NULL OR e.type = ANY ($3::text[]))
      AND ($4::timestamptz IS NULL OR e.created_at >= $4)
      AND ($5::timestamptz IS NULL OR e.created_at < $5)
      AND ($6::uuid IS NULL OR EXISTS (
            SELECT 1 FROM deliveries d WHERE d.account_id = e.account_id AND d.event_id = e.id AND d.endpoint_id = $6))
      AND ($7::text[] IS NULL OR EXISTS (
            SELECT 1 FROM deliveries d
             WHERE d.account_id = e.account_id AND d.event_id = e.id AND ($6::uuid IS NULL OR d.endpoint_id = $6)
               AND d.state = ANY ($7::text[])
               AND NOT EXISTS (
                 SELECT 1 FROM deliveries newer
                  WHERE newer.account_id = d.account_id AND newer.event_id = d.event_id AND newer.endpoint_id = d.endpoint_id
                    AND (newer.created_at, newer.id) > (d.created_at, d.id))))`,
    params: [accountId, f.ids ?? null, f.types ?? null, f.since ?? null, f.until ?? null, f.endpointId ?? null, f.states ?? null],
  };
}

/** One page of the events a filter selects, newest first. */
export async function searchEvents(
  db: Queryable,
  p: { accountId: string; filter: EventFilter; limit: number; before?: { at: Date; id: string } },
): Promise<EventRow[]> {
  const w = where(p.accountId, p.filter);
  const { rows } = await db.query<EventRow>(
    `SELECT ${COLUMNS} FROM events e
      WHERE ${w.sql}
        AND ($8::timestamptz IS NULL OR (e.created_at, e.id) < ($8::timestamptz, $9::uuid))
      ORDER BY e.created_at DESC, e.id DESC LIMIT $10`,
    [...w.params, p.before?.at ?? null, p.before?.id ?? null, p.limit],
  );
  return rows;
}

/**
 * How many events a filter selects, counting no further than `cap` + 1, so
 * that the cost is bounded: a result above `cap` means "more than cap".
 */
export async function countEvents(db: Queryable, p: { accountId: string; filter: EventFilter; cap: number }): Promise<number> {
  const w = where(p.accountId, p.filter);
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM (SELECT 1 FROM events e WHERE ${w.sql} LIMIT $8) m`,
    [...w.params, p.cap + 1],
  );
  return rows[0]!.n;
}

/** The next events a filter selects after a position, oldest first: a replay's next batch (ids and types only). */
export async function nextEventsOf(
  db: Queryable,
  p: { accountId: string; filter: EventFilter; after?: { at: Date; id: string }; limit: number },
): Promise<Array<{ id: string; type: string; created_at: Date }>> {
  const w = where(p.accountId, p.filter);
  const { rows } = await db.query<{ id: string; type: string; created_at: Date }>(
    `SELECT e.id, e.type, e.created_at FROM events e
      WHERE ${w.sql}
        AND ($8::timestamptz IS NULL OR (e.created_at, e.id) > ($8::timestamptz, $9::uuid))
      ORDER BY e.created_at, e.id LIMIT $10`,
    [...w.params, p.after?.at ?? null, p.after?.id ?? null, p.limit],
  );
  return rows;
}
