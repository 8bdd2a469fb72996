import type { Db, Queryable } from '../db.ts';
import { plainArray, textArray, timeArray } from './array-literal.ts';
import type { DeliveryState } from './deliveries.ts';

/** The attempt log keeps this many attempts per endpoint: the panel shows the last 100. */
export const ATTEMPTS_KEPT = 100;

export type AttemptOutcome = 'succeeded' | 'retrying' | 'failed';

export interface AttemptRecord {
  id: string;
  accountId: string;
  endpointId: string;
  deliveryId: string | null;
  eventId: string;
  eventType: string;
  attemptNumber: number;
  isTest: boolean;
  startedAt: Date;
  durationMs: number;
  statusCode: number | null;
  /** What became of the delivery after this attempt. */
  outcome: AttemptOutcome;
  error: string | null;
  /** The address it was sent to. */
  url: string;
  /**
   * The X-Service-Signature it was sent with. The log keeps no other header:
   * the rest follow from the columns (`loggedHeaders`).
   */
  signature: string;
  responseExcerpt: Buffer | null;
  testBody: Buffer | null;
}

/**
 * Test-send attempt rows from one JSON parameter (see `attemptsJson`),
 * without rows whose endpoint was deleted meanwhile: those are left out
 * rather than failing the batch.
 */
const INSERT_ATTEMPTS = `
  INSERT INTO attempts (id, account_id, endpoint_id, delivery_id, event_id, event_type, attempt_number, is_test,
                        started_at, duration_ms, status_code, outcome, error, signature, response_excerpt, test_body, url)
  SELECT v.id, v.account_id, v.endpoint_id, v.delivery_id, v.event_id, v.event_type, v.attempt_number, v.is_test,
         v.started_at, v.duration_ms, v.status_code, v.outcome, v.error, v.signature,
         decode(v.response_excerpt, 'base64'), decode(v.test_body, 'base64'), v.url
    FROM jsonb_to_recordset($1::jsonb) AS v(
           id uuid, account_id uuid, endpoint_id uuid, delivery_id uuid, event_id uuid, event_type text, attempt_number int,
           is_test bool, started_at timestamptz, duration_ms int, status_code int, outcome text, error text,
           signature text, response_excerpt text, test_body text, url text)
    JOIN endpoints ep ON ep.id = v.endpoint_id
     -- What a foreign key would check (docs/decisions/0008): an endpoint
     -- being deleted is waited for, and then gets no attempt.
     FOR KEY SHARE OF ep
  ON CONFLICT (id) DO NOTHING`;

function attemptsJson(attempts: readonly AttemptRecord[]): string {
  return JSON.stringify(
    attempts.map((a) => ({
      id: a.id,
      account_id: a.accountId,
      endpoint_id: a.endpointId,
      delivery_id: a.deliveryId,
      event_id: a.eventId,
      event_type: a.eventType,
      attempt_number: a.attemptNumber,
      is_test: a.isTest,
      started_at: a.startedAt,
      duration_ms: a.durationMs,
      status_code: a.statusCode,
      outcome: a.outcome,
      error: a.error,
      signature: a.signature,
      response_excerpt: a.responseExcerpt?.toString('base64') ?? null,
      test_body: a.testBody?.toString('base64') ?? null,
      url: a.url,
    })),
  );
}

/** Inserts many test-send attempt rows in one statement (the dispatcher's go through `recordResults`). */
export async function insertAttempts(db: Queryable, attempts: readonly AttemptRecord[]): Promise<void> {
  if (attempts.length === 0) return;
  if (attempts.some((a) => a.deliveryId !== null || !a.isTest)) throw new Error('insertAttempts records test sends only; use recordResults for dispatched attempts');
  await db.query(INSERT_ATTEMPTS, [attemptsJson(attempts)]);
}

export interface DeliveryUpdate {
  id: string;
  leaseToken: number;
  state: DeliveryState;
  nextAttemptAt: Date;
  lastStatus: number | null;
  lastError: string | null;
}

/** An endpoint's failure streak after a batch (in `moved` below). */
const STREAK = `(CASE WHEN s.reset THEN s.failures ELSE ep.failure_streak + s.failures END)`;

/**
 * A dispatcher's attempt, as one positional JSON array: the account, endpoint
 * and event come from the delivery row instead, so a batch sends the
 * database about a third fewer bytes (writing them to the socket was a
 * visible share of a worker's time). One JSON parameter also costs far less
 * to encode than an array per column.
 */
function sentAttemptJson(a: AttemptRecord): unknown[] {
  return [a.id, a.deliveryId, a.eventType, a.attemptNumber, a.startedAt, a.durationMs, a.statusCode, a.outcome, a.error, a.signature, a.responseExcerpt?.toString('base64') ?? null, a.url];
}

const RECORD_RESULTS = `
  WITH applied AS (
    -- Fencing: a row changes only while it still carries the lease token of
    -- the worker that sent it; a late worker whose lease ran out changes
    -- nothing. Only a pending delivery has a lease token (every change out of
    -- pending clears it), so the token match is the whole guard. There is no
    -- condition on state on purpose: with it, when statistics lag behind a
    -- burst, the planner reads every pending row through deliveries_due
    -- instead of looking the batch up by key. (Arrays, not JSON, for the same
    -- reason: unnest of a known array tells the planner the row count.)
    -- The row lock this takes is what a foreign key's check would take for
    -- the attempt logged below (docs/decisions/0008): a delete of the
    -- delivery with its endpoint waits for it.
    UPDATE deliveries d
       SET state = v.state, next_attempt_at = v.next_attempt_at, last_status = v.last_status,
           last_error = v.last_error, lease_token = NULL, lease_until = NULL, updated_at = $8
      FROM unnest($2::uuid[], $3::int8[], $4::text[], $5::timestamptz[], $6::int[], $7::text[]) WITH ORDINALITY
           AS v(id, lease_token, state, next_attempt_at, last_status, last_error, ord)
     WHERE d.id = v.id AND d.lease_token = v.lease_token
    RETURNING d.id, d.account_id, d.endpoint_id, d.event_id, d.state, d.last_error, v.ord
  ), sent AS (
    SELECT j, (j->>1)::uuid AS delivery_id FROM jsonb_array_elements($1::jsonb) AS j
  ), lost AS (
    -- Attempts whose delivery the update above did not change (its lease ran
    -- out and another worker holds it, or this batch is written a second
    -- time): the request was sent all the same, so it is logged, with the
    -- delivery looked up by key, one row at a time (a lateral subquery that
    -- OFFSET 0 keeps from being flattened into a join, so no plan reads the
    -- table). FOR KEY SHARE does what a foreign key would: a delivery being
    -- deleted with its endpoint is waited for, then left out. None of these
    -- rows was updated by this statement, so the lock cannot miss one.
    SELECT s.j, d.account_id, d.endpoint_id, d.id, d.event_id
      FROM sent s
     CROSS JOIN LATERAL (SELECT account_id, endpoint_id, id, event_id FROM deliveries WHERE id = s.delivery_id OFFSET 0 FOR KEY SHARE) AS d
     WHERE NOT EXISTS (SELECT 1 FROM applied a WHERE a.id = s.delivery_id)
  ), logged AS (
    -- The account, endpoint and event come from the delivery row: from the
    -- update's RETURNING for nearly every attempt, so logging one costs no
    -- second visit to its delivery.
    INSERT INTO attempts (id, account_id, endpoint_id, delivery_id, event_id, event_type, attempt_number, is_test,
                          started_at, duration_ms, status_code, outcome, error, signature, response_excerpt, url)
    SELECT (j->>0)::uuid, d.account_id, d.endpoint_id, d.id, d.event_id, j->>2, (j->>3)::int, false,
           (j->>4)::timestamptz, (j->>5)::int, (j->>6)::int, j->>7, j->>8, j->>9, decode(j->>10, 'base64'), j->>11
      FROM (SELECT s.j, a.account_id, a.endpoint_id, a.id, a.event_id FROM sent s JOIN applied a ON a.id = s.delivery_id
            UNION ALL
            SELECT j, account_id, endpoint_id, id, event_id FROM lost) AS d
    ON CONFLICT (id) DO NOTHING
  ), ended AS (
    SELECT a.*, max(a.ord) FILTER (WHERE a.state = 'succeeded') OVER (PARTITION BY a.endpoint_id) AS last_success
      FROM applied a WHERE a.state IN ('succeeded', 'failed')
  ), streaks AS (
    -- Per endpoint, in completion order: a success restarts the streak, and
    -- the failed deliveries after the last success add to it.
    SELECT endpoint_id, bool_or(state = 'succeeded') AS reset,
           count(*) FILTER (WHERE state = 'failed' AND ord > COALESCE(last_success, 0))::int AS failures,
           (array_agg(last_error ORDER BY ord DESC) FILTER (WHERE state = 'failed'))[1] AS last_error
      FROM ended GROUP BY endpoint_id
  ), moved AS (
    -- The streak is computed on the endpoint's current row version (ep, not a
    -- snapshot), so two workers recording at once both count. Rows whose
    -- streak stays as it is are not written, unless it is at the threshold
    -- on an enabled endpoint (the threshold was lowered meanwhile).
    UPDATE endpoints ep
       SET failure_streak = ${STREAK},
           enabled = ep.enabled AND ${STREAK} < $9,
           disabled_at = CASE WHEN ep.enabled AND ${STREAK} >= $9 THEN $8 ELSE ep.disabled_at END,
           disabled_reason = CASE WHEN ep.enabled AND ${STREAK} >= $9
             THEN ${STREAK} || ' consecutive failed deliveries; the last: ' || COALESCE(s.last_error, 'unknown error')
             ELSE ep.disabled_reason END,
           updated_at = $8
      FROM streaks s
     WHERE ep.id = s.endpoint_id AND (${STREAK} <> ep.failure_streak OR (ep.enabled AND ${STREAK} >= $9))
    RETURNING ep.id, ep.enabled, ep.disabled_at
  )
  SELECT id FROM moved WHERE NOT enabled AND disabled_at = $8`;

/**
 * Records a batch of finished work in one statement (one round trip, atomic
 * on its own): the deliveries' new states (fenced by lease token), the
 * attempt rows (each with its delivery's account, endpoint and event, even
 * when its lease was lost), and each endpoint's failure streak, disabling those that reach
 * `threshold` with the reason and time. Returns the endpoints it disabled;
 * their pending deliveries are the caller's to skip (`skipPendingDeliveries`).
 * Running it twice with the same batch changes nothing the second time.
 */
export async function recordResults(
  db: Queryable,
  p: { attempts: readonly AttemptRecord[]; updates: readonly DeliveryUpdate[]; now: Date; threshold: number },
): Promise<string[]> {
  // The attempts here are a dispatcher's, each of a delivery (they take its
  // account, endpoint and event); test sends go through insertAttempts.
  if (p.attempts.some((a) => a.deliveryId === null || a.isTest)) throw new Error('recordResults records dispatched attempts only; use insertAttempts for test sends');
  const { rows } = await db.query<{ id: string }>(
    RECORD_RESULTS,
    [
      JSON.stringify(p.attempts.map(sentAttemptJson)),
      plainArray(p.updates.map((u) => u.id)),
      plainArray(p.updates.map((u) => u.leaseToken)),
      plainArray(p.updates.map((u) => u.state)),
      timeArray(p.updates.map((u) => u.nextAttemptAt)),
      plainArray(p.updates.map((u) => u.lastStatus)),
      textArray(p.updates.map((u) => u.lastError)),
      p.now,
      p.threshold,
    ],
    { name: 'herald_record_results' },
  );
  return rows.map((r) => r.id);
}

/**
 * A disabled endpoint receives nothing: its pending deliveries (retries
 * waiting, and any in flight, whose results the fencing then ignores) become
 * `skipped`, kept for recovery.
 */
export async function skipPendingDeliveries(db: Queryable, endpointIds: readonly string[], now: Date): Promise<number> {
  if (endpointIds.length === 0) return 0;
  return (
    await db.query(
      `UPDATE deliveries SET state = 'skipped', lease_token = NULL, lease_until = NULL, updated_at = $2
        WHERE endpoint_id = ANY ($1::uuid[]) AND state = 'pending'`,
      [endpointIds, now],
    )
  ).rowCount;
}

/**
 * Keeps the newest `keep` attempts of each endpoint given (newest by
 * started_at, ties broken by id, the lower kept): by the dispatcher every
 * second, off the delivery path, and after each test send.
 *
 * `since` bounds the delete per endpoint: attempts that started before it are
 * left alone (the dispatcher passes a little less than the previous run's
 * cutoff, so a run does not walk the index entries of rows it deleted before).
 * `cutoffs` receives, once the run has committed, for each endpoint with at
 * least `keep` attempts, the start time of the oldest attempt kept.
 *
 * Per endpoint: the oldest attempt kept is found through the endpoint's
 * index (the keep-th newest), and the rows behind it are deleted through the
 * same index, so a run reads little more than what it deletes. Before, it
 * ranked every attempt of the endpoints and joined the losers back by id,
 * and when the planner expected to delete much of the table it read all of
 * it, dead rows since the last vacuum included. Plain index scans only (no
 * sequential or bitmap scans): their cost follows the rows deleted, not the
 * table, and they mark the dead entries they pass, so the next run skips
 * them without visiting the table.
 */
export async function pruneAttempts(
  db: Db,
  endpointIds: readonly string[],
  keep: number,
  options: { since?: ReadonlyMap<string, Date>; cutoffs?: Map<string, Date> } = {},
): Promise<number> {
  if (endpointIds.length === 0) return 0;
  if (!Number.isInteger(keep) || keep < 1) throw new RangeError(`keep must be a positive integer, got ${keep}`);
  // In one order in every process, so two workers pruning the same endpoints
  // wait for each other instead of deadlocking.
  const ids = [...new Set(endpointIds)].sort();
  const since = ids.map((id) => options.since?.get(id) ?? null);
  const rows = await db.transaction(async (tx) => {
    await tx.query('SET LOCAL enable_seqscan = off');
    await tx.query('SET LOCAL enable_bitmapscan = off');
    return (await tx.query<{ endpoint_id: string; started_at: Date; deleted: number }>(
      `WITH oldest_kept AS MATERIALIZED (
         SELECT e.endpoint_id, e.since, k.started_at, k.id
           FROM unnest($1::uuid[], $3::timestamptz[]) AS e (endpoint_id, since)
          CROSS JOIN LATERAL (
            SELECT k.started_at, k.id FROM attempts k
             WHERE k.endpoint_id = e.endpoint_id
             ORDER BY k.started_at DESC, k.id
             OFFSET $2 - 1 LIMIT 1
          ) k
       ), gone AS (
         DELETE FROM attempts a USING oldest_kept o
          WHERE a.endpoint_id = o.endpoint_id
            AND a.started_at <= o.started_at
            AND a.started_at >= COALESCE(o.since, '-infinity')
            AND (a.started_at < o.started_at OR a.id > o.id)
         RETURNING 1
       )
       SELECT o.endpoint_id, o.started_at, (SELECT count(*) FROM gone)::int AS deleted FROM oldest_kept o`,
      [ids, keep, since],
    )).rows;
  });
  // Only once committed: a run rolled back deleted nothing behind these.
  for (const r of rows) options.cutoffs?.set(r.endpoint_id, r.started_at);
  return rows[0]?.deleted ?? 0;
}
