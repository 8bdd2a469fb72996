import type { Queryable } from '../db.ts';
import type { AttemptOutcome } from './record-results.ts';

/** One row of an endpoint's attempt log, without the request body. */
export interface AttemptRow {
  id: string;
  endpoint_id: string;
  delivery_id: string | null;
  event_id: string;
  event_type: string;
  attempt_number: number;
  is_test: boolean;
  started_at: Date;
  duration_ms: number;
  status_code: number | null;
  outcome: AttemptOutcome;
  error: string | null;
  response_excerpt: Buffer | null;
  /** The delivery's state now (null for a test or a delivery no longer kept): what became of a retrying attempt. */
  delivery_state: 'pending' | 'succeeded' | 'failed' | 'skipped' | null;
}

/**
 * An attempt with what was sent: the body (a test's own, or the event's
 * bytes) and the headers, stored whole before migration 009 and as the
 * signature alone since (`loggedHeaders` rebuilds them).
 */
export interface AttemptDetailRow extends AttemptRow {
  url: string | null;
  request_headers: Record<string, string> | null;
  signature: string | null;
  body: Buffer | null;
}

const COLUMNS = `a.id, a.endpoint_id, a.delivery_id, a.event_id, a.event_type, a.attempt_number, a.is_test,
  a.started_at, a.duration_ms, a.status_code, a.outcome, a.error, a.response_excerpt, dl.state AS delivery_state`;

/** The attempt's delivery, by primary key, for its state now. */
const DELIVERY = 'LEFT JOIN deliveries dl ON dl.id = a.delivery_id';

/** A position in a newest-first list: the last row's time and id. */
export interface TimeCursor {
  at: Date;
  id: string;
}

/** An endpoint's attempts, newest first, optionally of some outcomes only. */
export async function listAttempts(
  db: Queryable,
  p: { accountId: string; endpointId: string; outcomes?: readonly AttemptOutcome[]; limit: number; before?: TimeCursor },
): Promise<AttemptRow[]> {
  const { rows } = await db.query<AttemptRow>(
    `SELECT ${COLUMNS} FROM attempts a ${DELIVERY}
      WHERE a.account_id = $1 AND a.endpoint_id = $2
        AND ($3::text[] IS NULL OR a.outcome = ANY ($3::text[]))
        AND ($4::timestamptz IS NULL OR (a.started_at, a.id) < ($4::timestamptz, $5::uuid))
      ORDER BY a.started_at DESC, a.id DESC LIMIT $6`,
    [p.accountId, p.endpointId, p.outcomes ?? null, p.before?.at ?? null, p.before?.id ?? null, p.limit],
  );
  return rows;
}

export async function getAttempt(db: Queryable, p: { accountId: string; endpointId: string; id: string }): Promise<AttemptDetailRow | undefined> {
  const { rows } = await db.query<AttemptDetailRow>(
    `SELECT ${COLUMNS}, a.url, a.request_headers, a.signature, COALESCE(a.test_body, ev.body) AS body
       FROM attempts a ${DELIVERY} LEFT JOIN events ev ON NOT a.is_test AND ev.account_id = a.account_id AND ev.id = a.event_id
      WHERE a.account_id = $1 AND a.endpoint_id = $2 AND a.id = $3`,
    [p.accountId, p.endpointId, p.id],
  );
  return rows[0];
}

/** The newest attempt of each endpoint given, for list summaries. */
export async function lastAttempts(db: Queryable, endpointIds: readonly string[]): Promise<Map<string, AttemptRow>> {
  if (endpointIds.length === 0) return new Map();
  const { rows } = await db.query<AttemptRow>(
    `SELECT last.* FROM unnest($1::uuid[]) AS ep(id)
       CROSS JOIN LATERAL (
         SELECT ${COLUMNS} FROM attempts a ${DELIVERY} WHERE a.endpoint_id = ep.id ORDER BY a.started_at DESC, a.id DESC LIMIT 1
       ) last`,
    [endpointIds],
  );
  return new Map(rows.map((r) => [r.endpoint_id, r]));
}

/**
 * The attempts of the deliveries of one event (what the log still keeps),
 * oldest first. Each delivery's are looked for in its endpoint's log, which
 * the pruning keeps to about ATTEMPTS_KEPT, through attempts_endpoint_recent,
 * whose third column (the delivery) is matched inside the index. There is no
 * index by delivery: it cost an entry per attempt on the hot path, for this
 * page alone (migration 009).
 */
export async function attemptsOfEvent(db: Queryable, accountId: string, eventId: string): Promise<AttemptRow[]> {
  const { rows } = await db.query<AttemptRow>(
    `SELECT x.*
       FROM deliveries d
      CROSS JOIN LATERAL (
        SELECT ${COLUMNS} FROM attempts a ${DELIVERY} WHERE a.endpoint_id = d.endpoint_id AND a.delivery_id = d.id OFFSET 0
      ) x
      WHERE d.account_id = $1 AND d.event_id = $2
      ORDER BY x.started_at, x.id`,
    [accountId, eventId],
  );
  return rows;
}
