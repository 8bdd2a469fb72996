import type { Queryable } from '../db.ts';

export type DeliveryState = 'pending' | 'succeeded' | 'failed' | 'skipped';

export interface DeliveryBucketRow {
  state: DeliveryState;
  /** The bucket's number from the window's start, 0 first. */
  bucket: number;
  count: number;
}

/**
 * An endpoint's deliveries created in [from, to), counted by state and time
 * bucket. Each state is read from its own range of the (endpoint_id, state,
 * created_at) index and stops at `cap` rows, so the cost is bounded however
 * busy the endpoint is: a state that reaches the cap is counted as the cap.
 */
export async function countDeliveriesByBucket(
  db: Queryable,
  p: { accountId: string; endpointId: string; from: Date; to: Date; bucketMs: number; cap: number },
): Promise<DeliveryBucketRow[]> {
  const one = (state: DeliveryState) =>
    `(SELECT state, created_at FROM deliveries
       WHERE account_id = $1 AND endpoint_id = $2 AND state = '${state}' AND created_at >= $3 AND created_at < $4 LIMIT $5)`;
  const { rows } = await db.query<DeliveryBucketRow>(
    `SELECT d.state, floor(extract(epoch FROM d.created_at - $3::timestamptz) * 1000 / $6)::int AS bucket, count(*)::int AS count
       FROM (${one('succeeded')} UNION ALL ${one('failed')} UNION ALL ${one('pending')} UNION ALL ${one('skipped')}) d
      GROUP BY 1, 2`,
    [p.accountId, p.endpointId, p.from, p.to, p.cap, p.bucketMs],
  );
  return rows;
}

export interface LatencyRow {
  count: number;
  p50: number | null;
  p95: number | null;
  p99: number | null;
  max: number | null;
}

/**
 * Percentiles of the time taken by an endpoint's newest requests since a
 * time, tests left out, at most `limit` of them (the attempt log keeps about
 * 100 per endpoint anyway), read through attempts_endpoint_recent.
 */
export async function attemptLatency(db: Queryable, p: { accountId: string; endpointId: string; from: Date; limit: number }): Promise<LatencyRow> {
  const { rows } = await db.query<LatencyRow>(
    `SELECT count(*)::int AS count,
            percentile_disc(0.5) WITHIN GROUP (ORDER BY x.duration_ms) AS p50,
            percentile_disc(0.95) WITHIN GROUP (ORDER BY x.duration_ms) AS p95,
            percentile_disc(0.99) WITHIN GROUP (ORDER BY x.duration_ms) AS p99,
            max(x.duration_ms) AS max
       FROM (SELECT a.duration_ms FROM attempts a
              WHERE a.account_id = $1 AND a.endpoint_id = $2 AND NOT a.is_test AND a.started_at >= $3
              ORDER BY a.started_at DESC LIMIT $4) x`,
    [p.accountId, p.endpointId, p.from, p.limit],
  );
  return rows[0]!;
}
