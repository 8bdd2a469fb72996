import type { Queryable } from '../db.ts';

export interface EventRow {
  account_id: string;
  id: string;
  type: string;
  created_at: Date;
  body: Buffer;
  request_hash: Buffer;
}

const COLUMNS = 'account_id, id, type, created_at, body, request_hash';

export async function getEvent(db: Queryable, accountId: string, id: string): Promise<EventRow | undefined> {
  return (await db.query<EventRow>(`SELECT ${COLUMNS} FROM events WHERE account_id = $1 AND id = $2`, [accountId, id])).rows[0];
}

export interface NewEvent {
  id: string;
  type: string;
  body: Buffer;
  requestHash: Buffer;
}

/**
 * Stores events and their deliveries in one statement: each new event gets
 * one delivery per endpoint of the account subscribed to its type (`pending`
 * when enabled, `skipped` when disabled). Ids already stored are left alone.
 * Returns the ids it inserted and how many deliveries are pending (the caller
 * then wakes the dispatchers, after commit: see services/new-work.ts). One round trip, atomic on its own; callers that must undo
 * it on a later check run it inside a transaction.
 */
export async function insertEventsWithDeliveries(
  db: Queryable,
  p: { accountId: string; now: Date; events: readonly NewEvent[] },
): Promise<{ inserted: Set<string>; pending: number }> {
  const { rows } = await db.query<{ id: string; pending: number }>(
    `WITH ev AS (
       INSERT INTO events (account_id, id, type, created_at, body, request_hash)
       SELECT $1, v.id, v.type, $2, decode(v.body, 'base64'), decode(v.hash, 'base64')
         FROM unnest($3::uuid[], $4::text[], $5::text[], $6::text[]) WITH ORDINALITY AS v(id, type, body, hash, n)
        ORDER BY v.n
       ON CONFLICT (account_id, id) DO NOTHING
       RETURNING id, type
     ), dl AS (
       INSERT INTO deliveries (id, account_id, event_id, endpoint_id, state, next_attempt_at, created_at, updated_at)
       SELECT gen_random_uuid(), $1, ev.id, ep.id, CASE WHEN ep.enabled THEN 'pending' ELSE 'skipped' END, $2, $2, $2
         FROM ev JOIN endpoints ep ON ep.account_id = $1 AND ev.type = ANY (ep.event_types)
       RETURNING state
     )
     SELECT ev.id, (SELECT count(*) FROM dl WHERE state = 'pending')::int AS pending FROM ev`,
    [
      p.accountId,
      p.now,
      p.events.map((e) => e.id),
      p.events.map((e) => e.type),
      p.events.map((e) => e.body.toString('base64')),
      p.events.map((e) => e.requestHash.toString('base64')),
    ],
    { name: 'herald_publish' },
  );
  return { inserted: new Set(rows.map((r) => r.id)), pending: rows[0]?.pending ?? 0 };
}

export async function getEvents(db: Queryable, accountId: string, ids: readonly string[]): Promise<EventRow[]> {
  return (await db.query<EventRow>(`SELECT ${COLUMNS} FROM events WHERE account_id = $1 AND id = ANY ($2::uuid[])`, [accountId, ids])).rows;
}

/** One page of an account's events, newest first, optionally of some types and within [since, until). */
export async function listEvents(
  db: Queryable,
  p: { accountId: string; types?: readonly string[]; since?: Date; until?: Date; limit: number; before?: { at: Date; id: string } },
): Promise<EventRow[]> {
  const { rows } = await db.query<EventRow>(
    `SELECT ${COLUMNS} FROM events
      WHERE account_id = $1
        AND ($2::text[] IS NULL OR type = ANY ($2::text[]))
        AND ($3::timestamptz IS NULL OR created_at >= $3)
        AND ($4::timestamptz IS NULL OR created_at < $4)
        AND ($5::timestamptz IS NULL OR (created_at, id) < ($5::timestamptz, $6::uuid))
      ORDER BY created_at DESC, id DESC LIMIT $7`,
    [p.accountId, p.types ?? null, p.since ?? null, p.until ?? null, p.before?.at ?? null, p.before?.id ?? null, p.limit],
  );
  return rows;
}
