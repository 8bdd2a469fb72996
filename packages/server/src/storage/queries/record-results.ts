import type { Queryable } from '../db.ts';
import type { DeliveryState } from './deliveries.ts';

/** The attempt log keeps this many attempts per endpoint (SPEC.md). */
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
  requestHeaders: Record<string, string>;
  responseExcerpt: Buffer | null;
  testBody: Buffer | null;
}

/**
 * Inserts many attempt rows in one statement. Rows whose endpoint (or
 * delivery) was deleted meanwhile are left out rather than failing the batch.
 */
export async function insertAttempts(db: Queryable, attempts: readonly AttemptRecord[]): Promise<void> {
  if (attempts.length === 0) return;
  const col = <T>(f: (a: AttemptRecord) => T) => attempts.map(f);
  await db.query(
    `INSERT INTO attempts (id, account_id, endpoint_id, delivery_id, event_id, event_type, attempt_number, is_test,
                           started_at, duration_ms, status_code, outcome, error, request_headers, response_excerpt, test_body, url)
     SELECT v.id, v.account_id, v.endpoint_id, v.delivery_id, v.event_id, v.event_type, v.attempt_number, v.is_test,
            v.started_at, v.duration_ms, v.status_code, v.outcome, v.error, v.request_headers::jsonb,
            decode(v.response_excerpt, 'base64'), decode(v.test_body, 'base64'), v.url
       FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::uuid[], $5::uuid[], $6::text[], $7::int[], $8::bool[],
                   $9::timestamptz[], $10::int[], $11::int[], $12::text[], $13::text[], $14::text[], $15::text[], $16::text[], $17::text[])
            AS v(id, account_id, endpoint_id, delivery_id, event_id, event_type, attempt_number, is_test,
                 started_at, duration_ms, status_code, outcome, error, request_headers, response_excerpt, test_body, url)
      WHERE EXISTS (SELECT 1 FROM endpoints ep WHERE ep.id = v.endpoint_id)
        AND (v.delivery_id IS NULL OR EXISTS (SELECT 1 FROM deliveries d WHERE d.id = v.delivery_id))`,
    [
      col((a) => a.id),
      col((a) => a.accountId),
      col((a) => a.endpointId),
      col((a) => a.deliveryId),
      col((a) => a.eventId),
      col((a) => a.eventType),
      col((a) => a.attemptNumber),
      col((a) => a.isTest),
      col((a) => a.startedAt),
      col((a) => a.durationMs),
      col((a) => a.statusCode),
      col((a) => a.outcome),
      col((a) => a.error),
      col((a) => JSON.stringify(a.requestHeaders)),
      col((a) => a.responseExcerpt?.toString('base64') ?? null),
      col((a) => a.testBody?.toString('base64') ?? null),
      col((a) => a.url),
    ],
  );
}

export interface DeliveryUpdate {
  id: string;
  leaseToken: number;
  state: DeliveryState;
  nextAttemptAt: Date;
  lastStatus: number | null;
  lastError: string | null;
}

/**
 * Applies many attempt results in one statement. Fencing: a row is updated
 * only while it still carries the lease token of the worker that sent it; a
 * late worker whose lease ran out changes nothing. Returns the rows applied.
 */
export async function updateDeliveries(db: Queryable, updates: readonly DeliveryUpdate[], now: Date): Promise<Array<{ id: string; endpoint_id: string; state: DeliveryState }>> {
  if (updates.length === 0) return [];
  const { rows } = await db.query<{ id: string; endpoint_id: string; state: DeliveryState }>(
    `UPDATE deliveries d
        SET state = v.state, next_attempt_at = v.next_attempt_at, last_status = v.last_status,
            last_error = v.last_error, lease_token = NULL, updated_at = $7
       FROM unnest($1::uuid[], $2::int8[], $3::text[], $4::timestamptz[], $5::int[], $6::text[])
            AS v(id, lease_token, state, next_attempt_at, last_status, last_error)
      WHERE d.id = v.id AND d.lease_token = v.lease_token AND d.state = 'pending'
      RETURNING d.id, d.endpoint_id, d.state`,
    [
      updates.map((u) => u.id),
      updates.map((u) => u.leaseToken),
      updates.map((u) => u.state),
      updates.map((u) => u.nextAttemptAt),
      updates.map((u) => u.lastStatus),
      updates.map((u) => u.lastError),
      now,
    ],
  );
  return rows;
}

export interface StreakChange {
  endpointId: string;
  /** A delivery of this batch succeeded: the streak restarts from `failuresAfter`. */
  reset: boolean;
  /** Failed deliveries after the last success of the batch (or all of them). */
  failuresAfter: number;
  /** The message of the last failure, for the disable reason. */
  lastError: string | null;
}

/**
 * Moves failure streaks and disables endpoints that reach the threshold, with
 * the reason and time. Returns the endpoints it disabled.
 */
export async function applyStreaks(db: Queryable, changes: readonly StreakChange[], p: { threshold: number; now: Date }): Promise<string[]> {
  if (changes.length === 0) return [];
  const { rows } = await db.query<{ id: string }>(
    `UPDATE endpoints ep
        SET failure_streak = s.streak,
            enabled = CASE WHEN ep.enabled AND s.streak >= $5 THEN false ELSE ep.enabled END,
            disabled_at = CASE WHEN ep.enabled AND s.streak >= $5 THEN $6 ELSE ep.disabled_at END,
            disabled_reason = CASE WHEN ep.enabled AND s.streak >= $5
              THEN s.streak || ' consecutive failed deliveries; the last: ' || COALESCE(s.last_error, 'unknown error')
              ELSE ep.disabled_reason END,
            updated_at = $6
       FROM (SELECT v.id, CASE WHEN v.reset THEN v.failures ELSE e.failure_streak + v.failures END AS streak,
                    v.last_error, e.enabled AS was_enabled
               FROM unnest($1::uuid[], $2::bool[], $3::int[], $4::text[]) AS v(id, reset, failures, last_error)
               JOIN endpoints e ON e.id = v.id) s
      WHERE ep.id = s.id
      RETURNING ep.id, (s.was_enabled AND s.streak >= $5) AS just_disabled`,
    [changes.map((c) => c.endpointId), changes.map((c) => c.reset), changes.map((c) => c.failuresAfter), changes.map((c) => c.lastError), p.threshold, p.now],
  );
  return (rows as Array<{ id: string; just_disabled: boolean }>).filter((r) => r.just_disabled).map((r) => r.id);
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
      `UPDATE deliveries SET state = 'skipped', lease_token = NULL, updated_at = $2
        WHERE endpoint_id = ANY ($1::uuid[]) AND state = 'pending'`,
      [endpointIds, now],
    )
  ).rowCount;
}

/** Keeps the newest `keep` attempts of each endpoint given; run off the hot path. */
export async function pruneAttempts(db: Queryable, endpointIds: readonly string[], keep: number): Promise<number> {
  if (endpointIds.length === 0) return 0;
  return (
    await db.query(
      `DELETE FROM attempts a USING (
         SELECT id FROM (
           SELECT id, row_number() OVER (PARTITION BY endpoint_id ORDER BY started_at DESC, id) AS rn
             FROM attempts WHERE endpoint_id = ANY ($1::uuid[])
         ) ranked WHERE rn > $2
       ) old WHERE a.id = old.id`,
      [endpointIds, keep],
    )
  ).rowCount;
}
