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

/**
 * An event read to give it a new delivery, locked FOR KEY SHARE until the
 * transaction ends (what a foreign key from deliveries would take): the
 * maintainer, which locks an event before deleting it for having no delivery
 * left, then waits for this transaction and sees its delivery, or has deleted
 * the event already and this finds nothing.
 */
export async function getEventForNewDelivery(db: Queryable, accountId: string, id: string): Promise<EventRow | undefined> {
  return (await db.query<EventRow>(`SELECT ${COLUMNS} FROM events WHERE account_id = $1 AND id = $2 FOR KEY SHARE`, [accountId, id])).rows[0];
}

export interface NewEvent {
  accountId: string;
  id: string;
  type: string;
  /** When Herald accepted it: the envelope's created_at. (Its deliveries come due at the database's now: see `insertEventsWithDeliveries`.) */
  createdAt: Date;
  body: Buffer;
  requestHash: Buffer;
}

/** The key `insertEventsWithDeliveries` reports an inserted event under (ids are unique per account). */
export const eventKey = (accountId: string, id: string) => `${accountId}/${id}`;

/**
 * Stores events and their deliveries in one statement: each new event gets
 * one delivery per endpoint of its account subscribed to its type (`pending`
 * when enabled, `skipped` when disabled). Events of several accounts may share
 * the statement. Ids already stored are left alone. Returns the keys
 * (`eventKey`) it inserted and how many deliveries are pending (the caller
 * then wakes the dispatchers, after commit: see services/new-work.ts). One
 * round trip, atomic on its own; callers that must undo it on a later check
 * run it inside a transaction.
 *
 * Rows are written in key order (account, id), whatever the order given, so
 * two statements that share ids wait for each other instead of deadlocking
 * (which PostgreSQL would resolve by failing one of them). The sort is
 * stable: of one id given twice, the first given is the one stored.
 *
 * The deliveries are created and come due at `now`: null in production (the
 * database's clock, the one the claim compares due times with, so a process
 * whose clock is behind does not publish deliveries that wait for it to catch
 * up), a test clock's time otherwise. The events keep their own `createdAt`,
 * the time their signed envelope carries.
 */
export async function insertEventsWithDeliveries(
  db: Queryable,
  given: readonly NewEvent[],
  now: Date | null = null,
): Promise<{ inserted: Set<string>; pending: number }> {
  const events = [...given].sort((a, b) => compareKeys(a.accountId, a.id, b.accountId, b.id));
  const { rows } = await db.query<{ account_id: string; id: string; pending: number }>(
    `WITH ev AS (
       INSERT INTO events (account_id, id, type, created_at, body, request_hash)
       SELECT v.account_id, v.id, v.type, v.created_at, decode(v.body, 'base64'), decode(v.hash, 'base64')
         FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::timestamptz[], $5::text[], $6::text[]) WITH ORDINALITY
              AS v(account_id, id, type, created_at, body, hash, n)
        ORDER BY v.n
       ON CONFLICT (account_id, id) DO NOTHING
       RETURNING account_id, id, type, created_at
     ), dl AS (
       INSERT INTO deliveries (id, account_id, event_id, endpoint_id, state, next_attempt_at, created_at, updated_at)
       SELECT herald_uuid_v7(ev.created_at), ev.account_id, ev.id, ep.id, CASE WHEN ep.enabled THEN 'pending' ELSE 'skipped' END,
              COALESCE($7::timestamptz, now()), COALESCE($7::timestamptz, now()), COALESCE($7::timestamptz, now())
         FROM ev JOIN endpoints ep ON ep.account_id = ev.account_id AND ev.type = ANY (ep.event_types)
          -- What a foreign key would check (docs/decisions/0008): an endpoint
          -- being deleted is waited for, and then gets no delivery.
          FOR KEY SHARE OF ep
       RETURNING state
     )
     SELECT ev.account_id, ev.id, (SELECT count(*) FROM dl WHERE state = 'pending')::int AS pending FROM ev`,
    [
      events.map((e) => e.accountId),
      events.map((e) => e.id),
      events.map((e) => e.type),
      events.map((e) => e.createdAt),
      events.map((e) => e.body.toString('base64')),
      events.map((e) => e.requestHash.toString('base64')),
      now,
    ],
    { name: 'herald_publish_v4' },
  );
  return { inserted: new Set(rows.map((r) => eventKey(r.account_id, r.id))), pending: rows[0]?.pending ?? 0 };
}

function compareKeys(accountA: string, idA: string, accountB: string, idB: string): number {
  if (accountA !== accountB) return accountA < accountB ? -1 : 1;
  return idA < idB ? -1 : idA > idB ? 1 : 0;
}

export async function getEvents(db: Queryable, accountId: string, ids: readonly string[]): Promise<EventRow[]> {
  return (await db.query<EventRow>(`SELECT ${COLUMNS} FROM events WHERE account_id = $1 AND id = ANY ($2::uuid[])`, [accountId, ids])).rows;
}
