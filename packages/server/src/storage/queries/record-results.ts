import type { Db, Queryable } from '../db.ts';
import { plainArray, textArray } from './array-literal.ts';
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

export type ResultOutcome =
  | 'succeeded' // 2xx: done
  | 'retry' // failed attempt, will be retried after retryInMs
  | 'failed' // failed attempt, no retry left (or a permanent failure): the delivery failed
  | 'skipped' // nothing sent: the endpoint was disabled
  | 'given_back'; // nothing answered: shutdown abort or lease too short to send; no attempt spent, due again now

export interface DeliveryResult {
  deliveryId: string;
  leaseToken: number;
  endpointId: string;
  outcome: ResultOutcome;
  /** 'retry' only: how long from now (the database's now) until it is due again. */
  retryInMs: number | null;
  status: number | null;
  error: string | null;
  /** The answer was 429 or 503: slow the endpoint down (Retry-After in ms if it gave one). */
  throttle: { retryAfterMs: number | null } | null;
  /** The attempt row when a request was sent. */
  attempt: AttemptRecord | null;
}

/** How long a slowed-down endpoint gets no new request without a Retry-After, and the bounds of one. */
export const THROTTLE_DEFAULT_MS = 5_000;
export const THROTTLE_MIN_MS = 1_000;
export const THROTTLE_MAX_MS = 3_600_000;

const STATE_OF: Record<ResultOutcome, DeliveryState> = {
  succeeded: 'succeeded',
  retry: 'pending',
  failed: 'failed',
  skipped: 'skipped',
  given_back: 'pending',
};

/** A receiver answered, or the request failed in transport: one of the delivery's attempts is spent. */
function countsAnAttempt(outcome: ResultOutcome): boolean {
  return outcome === 'succeeded' || outcome === 'retry' || outcome === 'failed';
}

interface EndpointRow {
  id: string;
  enabled: boolean;
  failure_streak: number;
  throttle_limit: number | null;
}

/** What a batch changes on one endpoint, worked out from its applied results in completion order. */
interface EndpointChange {
  id: string;
  failureStreak: number;
  disabledReason: string | null;
  throttleMs: number | null;
  throttleLimit: number | null;
}

function endpointChanges(
  endpoints: readonly EndpointRow[],
  results: readonly DeliveryResult[],
  p: { disableAfter: number; endpointCap: number },
): EndpointChange[] {
  // Each endpoint's results, in completion order.
  const resultsOf = new Map<string, DeliveryResult[]>();
  for (const r of results) {
    const list = resultsOf.get(r.endpointId);
    if (list) list.push(r);
    else resultsOf.set(r.endpointId, [r]);
  }
  const changes: EndpointChange[] = [];
  for (const ep of endpoints) {
    const own = resultsOf.get(ep.id);
    if (!own) continue;
    let streak = ep.failure_streak;
    let lastError: string | null = null;
    let limit = ep.throttle_limit;
    let throttleMs: number | null = null;
    // One batch's 429/503 answers are one congestion event (as in AIMD): the
    // limit halves once for them, not once per answer (ten 429s from requests
    // that were all in flight together would otherwise cut it 1,024-fold).
    let halved = false;
    for (const r of own) {
      // Only receivers' answers count: a given-back or skipped delivery, or a
      // retry still to come, leaves the streak as it is.
      if (r.outcome === 'succeeded') streak = 0;
      if (r.outcome === 'failed') {
        streak += 1;
        lastError = r.error;
      }
      if (r.throttle) {
        const asked = r.throttle.retryAfterMs ?? THROTTLE_DEFAULT_MS;
        throttleMs = Math.min(THROTTLE_MAX_MS, Math.max(THROTTLE_MIN_MS, asked));
        if (!halved) limit = Math.max(1, Math.floor((limit ?? p.endpointCap) / 2));
        halved = true;
      } else if (r.status !== null && r.status >= 200 && r.status < 300 && limit !== null) {
        // A slowed-down endpoint that answers 2xx gets one more request in
        // flight, and is back to normal at the cap.
        limit = limit + 1 >= p.endpointCap ? null : limit + 1;
      }
    }
    const disable = ep.enabled && streak >= p.disableAfter;
    if (streak === ep.failure_streak && !disable && throttleMs === null && limit === ep.throttle_limit) continue;
    changes.push({
      id: ep.id,
      failureStreak: streak,
      disabledReason: disable ? `${streak} consecutive failed deliveries; the last: ${lastError ?? 'unknown error'}` : null,
      throttleMs,
      throttleLimit: limit,
    });
  }
  return changes;
}

/**
 * Records a batch of finished work in one transaction of a few simple
 * statements:
 * 1. the fence: deletes the batch's `in_flight` rows that still carry the
 *    result's lease token; only those deliveries change (a result whose lease
 *    ran out, reaped or claimed again by another worker, changes nothing);
 * 2. the deliveries' new states: an answered attempt (or one that failed in
 *    transport) counts one attempt; a retry is due `retryInMs` after the
 *    database's now; a given-back delivery is due at once, with nothing spent;
 * 3. the attempt rows of every request sent, fenced out or not (a late one
 *    was sent all the same);
 * 4. per endpoint, from the applied results in completion order: the failure
 *    streak (a success restarts it, each failed delivery adds one), disabling
 *    at `disableAfter` (its pending deliveries become skipped), and the
 *    slow-down after 429/503 answers (and the recovery after 2xx answers).
 *
 * `now` is null in production (the database's clock); tests pass theirs.
 * Writing the same batch twice changes nothing the second time: its leases
 * are spent, and an attempt's id is its key. Returns the deliveries whose
 * lease still held (the others' results were late) and the endpoints this
 * batch disabled.
 */
export async function recordResults(
  db: Db,
  p: { results: readonly DeliveryResult[]; now: Date | null; disableAfter: number; endpointCap: number },
): Promise<{ applied: Set<string>; disabled: string[] }> {
  if (p.results.some((r) => r.attempt !== null && (r.attempt.deliveryId === null || r.attempt.isTest))) {
    throw new Error('recordResults records dispatched attempts only; use insertAttempts for test sends');
  }
  if (p.results.length === 0) return { applied: new Set(), disabled: [] };
  return db.transaction(async (tx) => {
    // The endpoints first, locked in one order in every worker, as disabling
    // and deleting an endpoint lock it before its deliveries: locked after
    // the deliveries (as before), a recording and a disable by hand each held
    // what the other waited for, and PostgreSQL broke the deadlock by failing
    // one of them. Two recordings wait for each other; the streak then adds
    // to the latest. NO KEY UPDATE, the lock an UPDATE of these columns
    // takes anyway, not FOR UPDATE: a publish holds its endpoints FOR KEY
    // SHARE until it commits, which FOR UPDATE waits for, and a batch publish
    // that took the endpoints in another order deadlocked with it.
    const { rows: lockedEndpoints } = await tx.query<EndpointRow>(
      `SELECT id, enabled, failure_streak, throttle_limit FROM endpoints WHERE id = ANY ($1::uuid[]) ORDER BY id FOR NO KEY UPDATE`,
      [[...new Set(p.results.map((r) => r.endpointId))].sort()],
      { name: 'herald_record_lock_endpoints' },
    );
    const fenced = await tx.query<{ delivery_id: string }>(
      `DELETE FROM in_flight f USING unnest($1::uuid[], $2::int8[]) AS v (delivery_id, lease_token)
        WHERE f.delivery_id = v.delivery_id AND f.lease_token = v.lease_token
        RETURNING f.delivery_id`,
      [plainArray(p.results.map((r) => r.deliveryId)), plainArray(p.results.map((r) => r.leaseToken))],
      { name: 'herald_record_fence' },
    );
    const applied = new Set(fenced.rows.map((r) => r.delivery_id));
    // The results whose lease held, and the attempts sent (fenced out or not).
    const kept: DeliveryResult[] = [];
    const sent: AttemptRecord[] = [];
    for (const r of p.results) {
      if (applied.has(r.deliveryId)) kept.push(r);
      if (r.attempt) sent.push(r.attempt);
    }

    if (kept.length > 0) {
      await tx.query(
        `UPDATE deliveries d
            SET state = v.state,
                attempts = d.attempts + CASE WHEN v.counted THEN 1 ELSE 0 END,
                next_attempt_at = COALESCE($8::timestamptz, now()) + COALESCE(v.due_in_ms, 0) * interval '1 millisecond',
                last_status = CASE WHEN v.given_back THEN d.last_status ELSE v.last_status END,
                last_error = CASE WHEN v.given_back THEN d.last_error ELSE v.last_error END,
                updated_at = COALESCE($8::timestamptz, now())
           FROM unnest($1::uuid[], $2::text[], $3::bool[], $4::bool[], $5::int8[], $6::int[], $7::text[])
                AS v (id, state, counted, given_back, due_in_ms, last_status, last_error)
          WHERE d.id = v.id`,
        [
          plainArray(kept.map((r) => r.deliveryId)),
          plainArray(kept.map((r) => STATE_OF[r.outcome])),
          plainArray(kept.map((r) => String(countsAnAttempt(r.outcome)))),
          plainArray(kept.map((r) => String(r.outcome === 'given_back'))),
          plainArray(kept.map((r) => (r.outcome === 'retry' ? Math.max(0, Math.round(r.retryInMs ?? 0)) : null))),
          plainArray(kept.map((r) => r.status)),
          textArray(kept.map((r) => r.error)),
          p.now,
        ],
        { name: 'herald_record_deliveries' },
      );
    }

    if (sent.length > 0) {
      // The account, endpoint and event come from the delivery row. FOR KEY
      // SHARE does what a foreign key would (docs/decisions/0008): a delivery
      // being deleted with its endpoint is waited for, then left out. Arrays,
      // not a JSON document: JSON cost the worker three times as much to
      // write, and the start time goes as milliseconds since the epoch.
      await tx.query(
        `INSERT INTO attempts (id, account_id, endpoint_id, delivery_id, event_id, event_type, attempt_number, is_test,
                               started_at, duration_ms, status_code, outcome, error, signature, response_excerpt, url)
         SELECT v.id, d.account_id, d.endpoint_id, d.id, d.event_id, v.event_type, v.attempt_number, false,
                timestamptz 'epoch' + v.started_ms * interval '1 millisecond', v.duration_ms, v.status_code, v.outcome, v.error,
                v.signature, decode(v.response_excerpt, 'base64'), v.url
           FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::int[], $5::int8[], $6::int[], $7::int[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[])
                AS v (id, delivery_id, event_type, attempt_number, started_ms, duration_ms, status_code, outcome, error, signature, response_excerpt, url)
           JOIN deliveries d ON d.id = v.delivery_id
            FOR KEY SHARE OF d
         ON CONFLICT (id) DO NOTHING`,
        [
          plainArray(sent.map((a) => a.id)),
          plainArray(sent.map((a) => a.deliveryId)),
          textArray(sent.map((a) => a.eventType)),
          plainArray(sent.map((a) => a.attemptNumber)),
          plainArray(sent.map((a) => a.startedAt.getTime())),
          plainArray(sent.map((a) => a.durationMs)),
          plainArray(sent.map((a) => a.statusCode)),
          plainArray(sent.map((a) => a.outcome)),
          textArray(sent.map((a) => a.error)),
          textArray(sent.map((a) => a.signature)),
          textArray(sent.map((a) => a.responseExcerpt?.toString('base64'))),
          textArray(sent.map((a) => a.url)),
        ],
        { name: 'herald_record_attempts' },
      );
    }

    const changes = endpointChanges(lockedEndpoints, kept, p);
    if (changes.length > 0) {
      await tx.query(
        `UPDATE endpoints ep
            SET failure_streak = v.failure_streak,
                enabled = ep.enabled AND v.disabled_reason IS NULL,
                disabled_at = CASE WHEN v.disabled_reason IS NULL THEN ep.disabled_at ELSE COALESCE($6::timestamptz, now()) END,
                disabled_reason = COALESCE(v.disabled_reason, ep.disabled_reason),
                throttled_until = CASE WHEN v.throttle_ms IS NULL THEN ep.throttled_until
                                       ELSE COALESCE($6::timestamptz, now()) + v.throttle_ms * interval '1 millisecond' END,
                throttle_limit = v.throttle_limit,
                updated_at = CASE WHEN v.failure_streak = ep.failure_streak AND v.disabled_reason IS NULL THEN ep.updated_at
                                  ELSE COALESCE($6::timestamptz, now()) END
           FROM unnest($1::uuid[], $2::int[], $3::text[], $4::int8[], $5::int[]) AS v (id, failure_streak, disabled_reason, throttle_ms, throttle_limit)
          WHERE ep.id = v.id`,
        [
          plainArray(changes.map((c) => c.id)),
          plainArray(changes.map((c) => c.failureStreak)),
          textArray(changes.map((c) => c.disabledReason)),
          plainArray(changes.map((c) => c.throttleMs)),
          plainArray(changes.map((c) => c.throttleLimit)),
          p.now,
        ],
        { name: 'herald_record_endpoints' },
      );
    }
    const disabled = changes.filter((c) => c.disabledReason !== null).map((c) => c.id);
    await skipPendingDeliveries(tx, disabled, p.now);
    return { applied, disabled };
  });
}

/**
 * A disabled endpoint receives nothing: its pending deliveries become
 * `skipped`, kept for recovery. Those in flight leave `in_flight` too, so
 * their results are fenced out (their attempts are still logged).
 */
export async function skipPendingDeliveries(db: Queryable, endpointIds: readonly string[], now: Date | null): Promise<number> {
  if (endpointIds.length === 0) return 0;
  const skipped = (
    await db.query(
      `UPDATE deliveries SET state = 'skipped', updated_at = COALESCE($2::timestamptz, now())
        WHERE endpoint_id = ANY ($1::uuid[]) AND state = 'pending'`,
      [endpointIds, now],
    )
  ).rowCount;
  // After the update, not before: a claim that held some of these rows
  // locked has committed by now, and this statement sees its in_flight rows.
  await db.query(`DELETE FROM in_flight WHERE endpoint_id = ANY ($1::uuid[])`, [endpointIds]);
  return skipped;
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
