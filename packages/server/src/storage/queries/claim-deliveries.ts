import type { Queryable } from '../db.ts';

export interface DueDelivery {
  id: string;
  endpoint_id: string;
  attempts: number;
}

/**
 * Locks up to `limit` due deliveries, oldest due first, skipping rows other
 * workers hold and endpoints this worker has no room for. Runs inside the
 * claim transaction; the rows stay locked until it ends.
 */
export async function selectDueForUpdate(
  tx: Queryable,
  p: { now: Date; limit: number; busyEndpoints: string[] },
): Promise<DueDelivery[]> {
  const { rows } = await tx.query<DueDelivery>(
    `SELECT id, endpoint_id, attempts FROM deliveries
      WHERE state = 'pending' AND next_attempt_at <= $1 AND NOT (endpoint_id = ANY ($2::uuid[]))
      ORDER BY next_attempt_at
      LIMIT $3
      FOR UPDATE SKIP LOCKED`,
    [p.now, p.busyEndpoints, p.limit],
  );
  return rows;
}

export interface ClaimedDelivery {
  id: string;
  account_id: string;
  event_id: string;
  endpoint_id: string;
  /** This attempt's number, counted at claim time. */
  attempts: number;
  lease_token: number;
  type: string;
  body: Buffer;
  url: string;
  secret_encrypted: Buffer;
  enabled: boolean;
}

/**
 * Leases the chosen deliveries: the attempt count rises now (a delivery that
 * kills its worker still runs out of attempts), next_attempt_at moves to the
 * end of the lease (the visibility timeout) and a new fencing token is drawn.
 */
export async function leaseDeliveries(tx: Queryable, p: { ids: string[]; now: Date; leaseUntil: Date; maxAttempts: number }): Promise<ClaimedDelivery[]> {
  const { rows } = await tx.query<ClaimedDelivery>(
    `UPDATE deliveries d
        SET attempts = LEAST(d.attempts + 1, $4), lease_token = nextval('delivery_lease_token'),
            next_attempt_at = $3, updated_at = $2
       FROM events e, endpoints ep
      WHERE d.id = ANY ($1::uuid[]) AND e.account_id = d.account_id AND e.id = d.event_id AND ep.id = d.endpoint_id
      RETURNING d.id, d.account_id, d.event_id, d.endpoint_id, d.attempts, d.lease_token, e.type, e.body,
                ep.url, ep.secret_encrypted, ep.enabled`,
    [p.ids, p.now, p.leaseUntil, p.maxAttempts],
  );
  return rows;
}

/** The earliest time any pending delivery comes due, to sleep exactly that long. */
export async function nextDueAt(db: Queryable): Promise<Date | undefined> {
  const { rows } = await db.query<{ at: Date | null }>(`SELECT min(next_attempt_at) AS at FROM deliveries WHERE state = 'pending'`);
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
