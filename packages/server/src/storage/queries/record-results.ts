import type { Db, Queryable } from '../db.ts';
import { plainArray, textArray } from './array-literal.ts';

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

/** How long a 429/503 answer stops new requests to its endpoint: its Retry-After, within bounds, or the default. */
function throttleMs(r: DeliveryResult): number | null {
  if (!r.throttle) return null;
  return Math.min(THROTTLE_MAX_MS, Math.max(THROTTLE_MIN_MS, r.throttle.retryAfterMs ?? THROTTLE_DEFAULT_MS));
}

/**
 * Records a batch of finished work in one call of `herald_record`
 * (storage/migrations/022_record_in_one_call.sql, where each step is
 * explained): one round trip and one transaction.
 * 1. the batch's endpoints are locked, in one order in every worker;
 * 2. the fence: only the results whose `in_flight` row still carries their
 *    lease token apply (a result whose lease ran out, reaped or claimed
 *    again by another worker, changes nothing), and their deliveries take
 *    their new states: an answered attempt (or one that failed in
 *    transport) counts one attempt; a retry is due `retryInMs` after the
 *    database's now; a given-back delivery is due at once, with nothing spent;
 * 3. the attempt rows of every request sent, fenced out or not (a late one
 *    was sent all the same);
 * 4. per endpoint, from the applied results in completion order: the failure
 *    streak (a success restarts it, each failed delivery adds one),
 *    disabling at `disableAfter` (its pending deliveries become skipped), and
 *    the slow-down after 429/503 answers (halved once per batch, and one
 *    more request in flight per 2xx answer, back up to the cap).
 *
 * `now` is null in production (the database's clock); tests pass theirs.
 * Writing the same batch twice changes nothing the second time: its leases
 * are spent, and an attempt's id is its key. Returns the deliveries whose
 * lease still held (the others' results were late) and the endpoints this
 * batch disabled.
 */
export async function recordResults(
  db: Queryable,
  p: { results: readonly DeliveryResult[]; now: Date | null; disableAfter: number; endpointCap: number },
): Promise<{ applied: Set<string>; disabled: string[] }> {
  if (p.results.some((r) => r.attempt !== null && (r.attempt.deliveryId === null || r.attempt.isTest))) {
    throw new Error('recordResults records dispatched attempts only; use insertAttempts for test sends');
  }
  if (p.results.length === 0) return { applied: new Set(), disabled: [] };
  const results = p.results;
  const sent = results.flatMap((r) => (r.attempt ? [r.attempt] : []));
  const { rows } = await db.query<{ applied: string[]; disabled: string[] }>(
    `SELECT applied, disabled FROM herald_record(
       $1::uuid[], $2::int8[], $3::uuid[], $4::text[], $5::int8[], $6::int[], $7::text[], $8::int8[],
       $9::uuid[], $10::uuid[], $11::text[], $12::int[], $13::int8[], $14::int[], $15::int[], $16::text[], $17::text[],
       $18::text[], $19::text[], $20::text[],
       $21::timestamptz, $22::int, $23::int)`,
    [
      plainArray(results.map((r) => r.deliveryId)),
      plainArray(results.map((r) => r.leaseToken)),
      plainArray(results.map((r) => r.endpointId)),
      plainArray(results.map((r) => r.outcome)),
      plainArray(results.map((r) => (r.outcome === 'retry' ? Math.max(0, Math.round(r.retryInMs ?? 0)) : null))),
      plainArray(results.map((r) => r.status)),
      textArray(results.map((r) => r.error)),
      plainArray(results.map(throttleMs)),
      // Arrays, not a JSON document: JSON cost the worker three times as
      // much to write, and the start time goes as milliseconds since the epoch.
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
      p.now,
      p.disableAfter,
      p.endpointCap,
    ],
    { name: 'herald_record' },
  );
  const row = rows[0]!;
  return { applied: new Set(row.applied), disabled: row.disabled };
}

/**
 * A disabled endpoint receives nothing: its pending deliveries become
 * `skipped`, kept for recovery. Those in flight leave `in_flight` too, so
 * their results are fenced out (their attempts are still logged). One call
 * of `herald_skip_pending` (migration 022), which `herald_record` calls for
 * an endpoint it disables. Returns how many deliveries were skipped.
 */
export async function skipPendingDeliveries(db: Queryable, endpointIds: readonly string[], now: Date | null): Promise<number> {
  if (endpointIds.length === 0) return 0;
  const { rows } = await db.query<{ skipped: number }>('SELECT herald_skip_pending($1::uuid[], $2::timestamptz) AS skipped', [endpointIds, now]);
  return rows[0]!.skipped;
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
