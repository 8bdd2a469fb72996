import type { Queryable } from '../db.ts';

/**
 * Pending deliveries are counted up to this many: past it the gauge says "at
 * least this many". Counting walks the `deliveries_due` index entry by entry,
 * so the bound keeps one scrape's cost fixed however large a backlog grows.
 */
export const PENDING_COUNTED_UP_TO = 100_000;

export interface Backlog {
  /** Pending deliveries (waiting for their first attempt or a retry, or in flight), up to PENDING_COUNTED_UP_TO. */
  pending: number;
  /** Seconds the most overdue pending delivery has been due; 0 when none is due. */
  oldestDueSeconds: number;
  /** Endpoints by state; every endpoint is in exactly one. */
  endpoints: { enabled: number; disabled: number; throttled: number };
}

/** Exported for the test that checks its plan reads the index. */
export const BACKLOG_SQL = `WITH t AS (SELECT coalesce($1::timestamptz, now()) AS now)
  SELECT (SELECT count(*)::int FROM (SELECT 1 FROM deliveries WHERE state = 'pending' ORDER BY next_attempt_at LIMIT $2) p) AS pending,
         (SELECT greatest(0, extract(epoch FROM t.now - d.next_attempt_at))::float8
            FROM deliveries d WHERE d.state = 'pending' ORDER BY d.next_attempt_at LIMIT 1) AS oldest_due_s,
         e.enabled, e.disabled, e.throttled
    FROM t, LATERAL (
      SELECT count(*) FILTER (WHERE enabled AND NOT throttled)::int AS enabled,
             count(*) FILTER (WHERE NOT enabled)::int AS disabled,
             count(*) FILTER (WHERE enabled AND throttled)::int AS throttled
        FROM (SELECT enabled, (throttled_until > t.now OR throttle_limit IS NOT NULL) IS TRUE AS throttled FROM endpoints) s
    ) e`;

/**
 * What the metrics report of the database, in one statement. Each part reads
 * an index or a small table: the count and the oldest due time come from the
 * partial index `deliveries_due` (ORDER BY … LIMIT keeps the planner on it,
 * never a scan of the table), and endpoints are few. `now` is null for the
 * database's clock; tests pass theirs.
 */
export async function readBacklog(db: Queryable, now: Date | null): Promise<Backlog> {
  const { rows } = await db.query<{ pending: number; oldest_due_s: number | null; enabled: number; disabled: number; throttled: number }>(
    BACKLOG_SQL,
    [now, PENDING_COUNTED_UP_TO],
  );
  const r = rows[0]!;
  return { pending: r.pending, oldestDueSeconds: r.oldest_due_s ?? 0, endpoints: { enabled: r.enabled, disabled: r.disabled, throttled: r.throttled } };
}
