import type { Db, Queryable } from '../db.ts';
import type { DeliveryState } from './deliveries.ts';

/**
 * What the maintainer deletes: finished deliveries past their retention,
 * their attempts, events left with no delivery, expired idempotency keys and
 * ended sessions. Every statement here deletes at most `limit` rows, so each
 * transaction is short, and none touches a pending delivery, so none waits
 * for (or holds up) the dispatcher.
 *
 * Cut-offs are computed by the database from its own clock (`now` null), so
 * every process agrees on them; tests pass their clock's time instead.
 */

/** The lowest UUID: where a walk over ids starts. */
const FIRST_ID = '00000000-0000-0000-0000-000000000000';

export interface DeletedDeliveries {
  deliveries: number;
  attempts: number;
  events: number;
  /** How many rows the walk picked (less than `limit`: it reached the last endpoint). */
  picked: number;
  /** The endpoint the batch ended on: the next batch starts there. */
  lastEndpoint: string | null;
}

/**
 * One batch of retention: up to `limit` deliveries in one of `states` whose
 * last change (updated_at) is more than `days` days old, with their attempts,
 * and then the events of those deliveries that have none left (and are older
 * than `eventDays`). In one transaction.
 *
 * The walk goes endpoint by endpoint (in id order, from `afterEndpoint`)
 * through deliveries_endpoint_state (endpoint_id, state, created_at): a
 * delivery is created before it changes, so "changed before the cut-off"
 * implies "created before it", which the index finds; updated_at is then
 * checked on the row. So a batch reads little more than what it deletes, and
 * the failed deliveries kept longer than the succeeded ones are never walked
 * over again and again.
 */
export async function deleteExpiredDeliveries(
  db: Db,
  p: { states: readonly DeliveryState[]; days: number; eventDays: number; now: Date | null; afterEndpoint: string | null; limit: number },
): Promise<DeletedDeliveries> {
  if (p.states.includes('pending')) throw new Error('pending deliveries are never deleted by retention');
  return db.transaction(async (tx) => {
    // Index scans only: on a table where most rows are past the cut-off, the
    // planner would read it from its first page, and once deleted rows' space
    // is reused there, that walks past new rows to find old ones.
    await tx.query('SET LOCAL enable_seqscan = off');
    await tx.query('SET LOCAL enable_bitmapscan = off');
    const { rows } = await tx.query<{ deliveries: number; attempts: number; picked: number; last_endpoint: string | null; account_ids: string[] | null; event_ids: string[] | null }>(
      `WITH cutoff AS MATERIALIZED (
         SELECT COALESCE($1::timestamptz, now()) - make_interval(days => $2) AS at
       ), picked AS MATERIALIZED (
         SELECT d.id, d.endpoint_id
           FROM (SELECT id FROM endpoints WHERE id >= $3::uuid ORDER BY id) ep
          CROSS JOIN cutoff c
          CROSS JOIN LATERAL (
            SELECT d.id, d.endpoint_id FROM deliveries d
             WHERE d.endpoint_id = ep.id AND d.state = ANY ($4::text[])
               AND d.created_at < c.at AND d.updated_at < c.at
             LIMIT $5
          ) d
          LIMIT $5
       ), gone AS (
         -- Checked again on the row being deleted: a delivery sent again
         -- meanwhile (pending once more) stays.
         DELETE FROM deliveries d USING picked p, cutoff c
          WHERE d.id = p.id AND d.state = ANY ($4::text[]) AND d.updated_at < c.at
         RETURNING d.id, d.account_id, d.event_id, d.endpoint_id
       ), gone_attempts AS (
         -- Through attempts_endpoint_recent, which carries the delivery id;
         -- an endpoint's log holds at most about 100 attempts.
         DELETE FROM attempts a USING gone g
          WHERE a.endpoint_id = g.endpoint_id AND a.delivery_id = g.id
         RETURNING 1
       ), events AS (
         SELECT DISTINCT account_id, event_id FROM gone
       )
       SELECT (SELECT count(*) FROM gone)::int AS deliveries,
              (SELECT count(*) FROM gone_attempts)::int AS attempts,
              (SELECT count(*) FROM picked)::int AS picked,
              (SELECT max(endpoint_id::text) FROM picked) AS last_endpoint,
              (SELECT array_agg(account_id) FROM events) AS account_ids,
              (SELECT array_agg(event_id) FROM events) AS event_ids`,
      [p.now, p.days, p.afterEndpoint ?? FIRST_ID, p.states, p.limit],
    );
    const r = rows[0]!;
    // A statement of its own: it must see the deletes above.
    const events = r.event_ids?.length ? await deleteEventsWithoutDeliveries(tx, r.account_ids!, r.event_ids, p.eventDays, p.now) : 0;
    return { deliveries: r.deliveries, attempts: r.attempts, events, picked: r.picked, lastEndpoint: r.last_endpoint };
  });
}

/**
 * Deletes those of the events given that are older than `days` and have no
 * delivery left, inside the caller's transaction (READ COMMITTED). Two
 * statements: the first locks the events, skipping any that a transaction
 * giving it a new delivery holds (a redelivery locks the event FOR KEY
 * SHARE, getEventForNewDelivery; such an event has a delivery again, or
 * waits for a later walk); the second deletes among those locked, on a
 * snapshot taken after the lock, so it sees every delivery committed before.
 * A redelivery that comes later waits for this transaction, then finds the
 * event gone. Skipping instead of waiting: this transaction holds the rows of
 * the deliveries it deleted, which a redelivery may be about to lock.
 */
async function deleteEventsWithoutDeliveries(tx: Queryable, accountIds: readonly string[], eventIds: readonly string[], days: number, now: Date | null): Promise<number> {
  const { rows } = await tx.query<{ account_id: string; id: string }>(
    `SELECT e.account_id, e.id FROM events e JOIN unnest($1::uuid[], $2::uuid[]) AS g (account_id, id) ON e.account_id = g.account_id AND e.id = g.id
      WHERE e.created_at < COALESCE($4::timestamptz, now()) - make_interval(days => $3)
      FOR UPDATE OF e SKIP LOCKED`,
    [accountIds, eventIds, days, now],
  );
  if (rows.length === 0) return 0;
  return (
    await tx.query(
      `DELETE FROM events e USING unnest($1::uuid[], $2::uuid[]) AS g (account_id, id)
        WHERE e.account_id = g.account_id AND e.id = g.id
          AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.account_id = g.account_id AND d.event_id = g.id)`,
      [rows.map((r) => r.account_id), rows.map((r) => r.id)],
    )
  ).rowCount;
}

export interface EventWalkPosition {
  createdAt: Date;
  id: string;
}

/**
 * One batch of the walk over an account's events older than `days` days, in
 * creation order after `after`: of the next `limit` of them, deletes those
 * without a delivery (events no endpoint subscribed to, or whose deliveries
 * went with their endpoint). Events whose deliveries are deleted by
 * retention go with them (`deleteExpiredDeliveries`); this walk is for the
 * others, and the caller remembers where it got to, so each event is read
 * about once. Returns where the batch ended (undefined: it read nothing), and
 * whether the walk reached the cut-off.
 */
export async function deleteEventsWithoutDeliveriesOf(
  db: Db,
  p: { accountId: string; days: number; now: Date | null; after: EventWalkPosition | null; limit: number },
): Promise<{ deleted: number; scanned: number; last: EventWalkPosition | undefined; done: boolean }> {
  const { rows } = await db.query<{ id: string; created_at: Date; orphan: boolean }>(
    `SELECT e.id, e.created_at, NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.account_id = e.account_id AND d.event_id = e.id) AS orphan
       FROM events e
      WHERE e.account_id = $1
        AND e.created_at < COALESCE($3::timestamptz, now()) - make_interval(days => $2)
        AND (e.created_at, e.id) > ($4::timestamptz, $5::uuid)
      ORDER BY e.created_at, e.id
      LIMIT $6`,
    [p.accountId, p.days, p.now, p.after?.createdAt ?? '-infinity', p.after?.id ?? FIRST_ID, p.limit],
  );
  const orphans = rows.filter((r) => r.orphan).map((r) => r.id);
  const deleted = orphans.length
    ? await db.transaction((tx) => deleteEventsWithoutDeliveries(tx, orphans.map(() => p.accountId), orphans, p.days, p.now))
    : 0;
  const last = rows.at(-1);
  return { deleted, scanned: rows.length, last: last ? { createdAt: last.created_at, id: last.id } : undefined, done: rows.length < p.limit };
}

/** The accounts after `after` in id order, `limit` at a time (the event walk goes account by account). */
export async function accountIdsAfter(db: Queryable, after: string | null, limit: number): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>('SELECT id FROM accounts WHERE id > $1::uuid ORDER BY id LIMIT $2', [after ?? FIRST_ID, limit]);
  return rows.map((r) => r.id);
}

/**
 * Takes up to `limit` rows off the list of endpoints whose attempt log grew
 * (fed by a trigger on attempts, migration 014), without duplicates. The
 * caller prunes them, and puts them back (`markAttemptLogsGrown`) if that fails.
 */
export async function takeGrownAttemptLogs(db: Queryable, limit: number): Promise<string[]> {
  const { rows } = await db.query<{ endpoint_id: string }>(
    `DELETE FROM attempt_log_grown WHERE ctid IN (SELECT ctid FROM attempt_log_grown LIMIT $1) RETURNING endpoint_id`,
    [limit],
  );
  return [...new Set(rows.map((r) => r.endpoint_id))];
}

export async function markAttemptLogsGrown(db: Queryable, endpointIds: readonly string[]): Promise<void> {
  if (endpointIds.length === 0) return;
  await db.query('INSERT INTO attempt_log_grown (endpoint_id) SELECT unnest($1::uuid[])', [endpointIds]);
}

/** Up to `limit` idempotency keys stored more than `ttlMs` ago. */
export async function sweepIdempotencyKeys(db: Queryable, p: { ttlMs: number; now: Date | null; limit: number }): Promise<number> {
  return (
    await db.query(
      `DELETE FROM idempotency_keys WHERE (account_id, key) IN (
         SELECT account_id, key FROM idempotency_keys
          WHERE created_at < COALESCE($1::timestamptz, now()) - make_interval(secs => $2::float8 / 1000)
          LIMIT $3)`,
      [p.now, p.ttlMs, p.limit],
    )
  ).rowCount;
}

/** Up to `limit` sessions that can no longer be used: expired, or unused for `idleMs`. */
export async function sweepSessions(db: Queryable, p: { idleMs: number; now: Date | null; limit: number }): Promise<number> {
  return (
    await db.query(
      `DELETE FROM sessions WHERE id IN (
         SELECT id FROM sessions
          WHERE expires_at <= COALESCE($1::timestamptz, now())
             OR last_seen_at <= COALESCE($1::timestamptz, now()) - make_interval(secs => $2::float8 / 1000)
          LIMIT $3)`,
      [p.now, p.idleMs, p.limit],
    )
  ).rowCount;
}

/** Whether a table exists in Herald's schema (for tables a newer migration brings). */
export async function tableExists(db: Queryable, name: string): Promise<boolean> {
  const { rows } = await db.query<{ found: boolean }>('SELECT to_regclass($1) IS NOT NULL AS found', [name]);
  return rows[0]?.found ?? false;
}
