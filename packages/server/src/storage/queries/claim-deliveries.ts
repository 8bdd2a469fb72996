import type { Queryable } from '../db.ts';
import { eventKey } from './events.ts';

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
  /** The event's envelope; every delivery of one event in a claim holds the same Buffer. */
  body: Buffer;
  url: string;
  secret_encrypted: Buffer;
  enabled: boolean;
}

/**
 * Claims due deliveries in one statement (one round trip, no explicit
 * transaction):
 * - reads the `scan` oldest due rows (the head) and leaves out endpoints
 *   this worker has no room for;
 * - only when that head was full and left fewer than `limit` rows (endpoints
 *   at their cap hold the oldest due work), also takes the due rows of every
 *   other endpoint behind the head, by key: an endpoint at its cap with a
 *   backlog is passed over, not read, however long its backlog;
 * - keeps at most the room left per endpoint (the per-endpoint cap, given
 *   this worker's in-flight counts) and `limit` in all, and locks only
 *   those, skipping rows other workers hold (SKIP LOCKED);
 * - leases them: the attempt count rises now (a delivery that kills its
 *   worker still runs out of attempts), lease_until is set to the end of the
 *   lease (the visibility timeout), and a new fencing token is drawn. Rows
 *   whose lease has not run out are passed over. No indexed column changes,
 *   so the update can be HOT (migration 008).
 *
 * Each event's body comes once per claim, on the first of its deliveries
 * (the others have NULL), and becomes one Buffer that all of them share: a
 * claim of 500 deliveries of one 1 MiB event holds 1 MiB, not 500.
 *
 * The statement is the function herald_claim, from migration 006 (with the
 * notes on how it is written, and why it is a function) as migrations 008 and
 * 011 changed it: change it with a new migration that replaces it.
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
  const { rows } = await db.query<Omit<ClaimedDelivery, 'body'> & { body: string | null }>(
    `SELECT * FROM herald_claim($1, $2::uuid[], $3, $4, $5::uuid[], $6::int[], $7, $8, $9)`,
    [p.now, busy, p.scan, p.endpointCap, [...p.inFlight.keys()], [...p.inFlight.values()], p.limit, p.maxAttempts, p.leaseUntil],
    { name: 'herald_claim' },
  );
  const bodies = new Map<string, Buffer>();
  for (const r of rows) if (r.body !== null) bodies.set(eventKey(r.account_id, r.event_id), Buffer.from(r.body, 'utf8'));
  // In place: a copy of every claimed row was garbage the moment it was made.
  for (const r of rows) (r as unknown as ClaimedDelivery).body = bodies.get(eventKey(r.account_id, r.event_id))!;
  return rows as unknown as ClaimedDelivery[];
}

/**
 * The earliest time a pending delivery not under a live lease comes due, to
 * sleep exactly that long. Leases still running (another worker's deliveries
 * in flight) are passed over: the end of one is at least the lease (15 s or
 * more) away when it starts, and the dispatcher's poll, which caps every
 * sleep, picks it up when it runs out.
 */
export async function nextDueAt(db: Queryable, now: Date): Promise<Date | undefined> {
  const { rows } = await db.query<{ at: Date | null }>(
    `SELECT next_attempt_at AS at FROM deliveries
      WHERE state = 'pending' AND (lease_until IS NULL OR lease_until <= $1)
      ORDER BY next_attempt_at LIMIT 1`,
    [now],
    { name: 'herald_next_due' },
  );
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
      `UPDATE deliveries SET next_attempt_at = LEAST(next_attempt_at, $1), lease_token = NULL, lease_until = NULL
        WHERE state = 'pending' AND lease_token IS NOT NULL AND (lease_until > $1 OR next_attempt_at > $1)`,
      [now],
    )
  ).rowCount;
}
