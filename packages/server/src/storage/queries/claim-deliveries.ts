import type { Queryable } from '../db.ts';

export interface ClaimedDelivery {
  id: string;
  account_id: string;
  event_id: string;
  endpoint_id: string;
  /** This attempt's number, counted at claim time. */
  attempts: number;
  /** The count before this claim: at the maximum, the delivery is out of attempts. */
  attempts_before: number;
  lease_token: number;
  type: string;
  body: Buffer;
  url: string;
  secret_encrypted: Buffer;
  enabled: boolean;
}

/**
 * Claims due deliveries in one statement (one round trip, no explicit
 * transaction):
 * - reads up to `scan` due rows, oldest first, leaving out endpoints this
 *   worker has no room for;
 * - keeps at most the room left per endpoint (the per-endpoint cap, given
 *   this worker's in-flight counts) and `limit` in all, and locks only
 *   those, skipping rows other workers hold (SKIP LOCKED);
 * - leases them: the attempt count rises now (a delivery that kills its
 *   worker still runs out of attempts), next_attempt_at moves to the end of
 *   the lease (the visibility timeout), and a new fencing token is drawn.
 */
export async function claimDeliveries(
  db: Queryable,
  p: {
    now: Date;
    limit: number;
    scan: number;
    leaseUntil: Date;
    maxAttempts: number;
    endpointCap: number;
    inFlight: ReadonlyMap<string, number>;
  },
): Promise<ClaimedDelivery[]> {
  const busy = [...p.inFlight].filter(([, n]) => n >= p.endpointCap).map(([id]) => id);
  // The body comes as text (it is UTF-8 JSON): half the bytes of bytea's hex
  // form on the wire, and no hex to decode on either side.
  const { rows } = await db.query<Omit<ClaimedDelivery, 'body'> & { body: string }>(
    `WITH due AS (
       SELECT id, endpoint_id, next_attempt_at FROM deliveries
        WHERE state = 'pending' AND next_attempt_at <= $1 AND NOT (endpoint_id = ANY ($2::uuid[]))
        ORDER BY next_attempt_at
        LIMIT $3
     ), ranked AS (
       SELECT due.id, due.next_attempt_at,
              row_number() OVER (PARTITION BY due.endpoint_id ORDER BY due.next_attempt_at) AS rn,
              $4::int - COALESCE(busy.n, 0) AS room
         FROM due LEFT JOIN unnest($5::uuid[], $6::int[]) AS busy (endpoint_id, n) ON busy.endpoint_id = due.endpoint_id
     ), chosen AS MATERIALIZED (
       -- The candidates are walked in order and each is locked by its key
       -- (skipping rows another worker holds); the walk stops at the limit,
       -- so it locks the rows taken, plus any it finds claimed meanwhile (held
       -- until the statement ends), and the scan above locks nothing. The
       -- conditions are checked on the version locked, which is the newest.
       -- Written as a lateral key lookup, not a join: the generic plan, costed
       -- on a table that was small when it was made, joined the candidates to
       -- an index scan of every due row, in a nested loop that grew with the
       -- square of the backlog (88 ms per claim at 620 due).
       SELECT l.id, l.attempts AS attempts_before
         FROM (SELECT id, rn, next_attempt_at FROM ranked WHERE rn <= room ORDER BY rn, next_attempt_at) r
        CROSS JOIN LATERAL (
          SELECT d.id, d.attempts, d.state, d.next_attempt_at FROM deliveries d WHERE d.id = r.id
          OFFSET 0 FOR UPDATE SKIP LOCKED
        ) l
        WHERE l.state = 'pending' AND l.next_attempt_at <= $1
        LIMIT $7
     )
     UPDATE deliveries d
        SET attempts = LEAST(d.attempts + 1, $8), lease_token = nextval('delivery_lease_token'),
            next_attempt_at = $9, updated_at = $1
       FROM chosen, events e, endpoints ep
      WHERE d.id = chosen.id AND e.account_id = d.account_id AND e.id = d.event_id AND ep.id = d.endpoint_id
      RETURNING d.id, d.account_id, d.event_id, d.endpoint_id, d.attempts, chosen.attempts_before, d.lease_token,
                e.type, convert_from(e.body, 'UTF8') AS body, ep.url, ep.secret_encrypted, ep.enabled`,
    [p.now, busy, p.scan, p.endpointCap, [...p.inFlight.keys()], [...p.inFlight.values()], p.limit, p.maxAttempts, p.leaseUntil],
    { name: 'herald_claim' },
  );
  for (const r of rows) (r as unknown as ClaimedDelivery).body = Buffer.from(r.body, 'utf8');
  return rows as unknown as ClaimedDelivery[];
}

/** The earliest time any pending delivery comes due, to sleep exactly that long. */
export async function nextDueAt(db: Queryable): Promise<Date | undefined> {
  const { rows } = await db.query<{ at: Date | null }>(`SELECT min(next_attempt_at) AS at FROM deliveries WHERE state = 'pending'`, [], {
    name: 'herald_next_due',
  });
  return rows[0]?.at ?? undefined;
}

/**
 * Ends every lease at once. Only for the embedded engine at start-up: the
 * data-directory lock proves no other process holds any of them, so leases
 * left behind belong to a process that died.
 */
export async function releaseAllLeases(db: Queryable, now: Date): Promise<number> {
  return (
    await db.query(
      `UPDATE deliveries SET next_attempt_at = $1, lease_token = NULL
        WHERE state = 'pending' AND lease_token IS NOT NULL AND next_attempt_at > $1`,
      [now],
    )
  ).rowCount;
}
