import { randomUUID } from 'node:crypto';
import type { Queryable } from '../db.ts';
import type { SignatureScheme } from '../../core/secrets.ts';
import { eventKey } from './events.ts';

export interface ClaimedDelivery {
  id: string;
  account_id: string;
  event_id: string;
  endpoint_id: string;
  /** This attempt's number: answered attempts so far + 1 (attempts are counted when an answer is recorded). */
  attempt: number;
  /** The fencing token: the result is applied only while the delivery's in_flight row still carries it. */
  lease_token: number;
  type: string;
  /** The event's envelope; every delivery of one event in a claim holds the same Buffer. */
  body: Buffer;
  url: string;
  origin: string;
  secret_encrypted: Buffer;
  /** How the endpoint signs: 'herald' or 'standard-webhooks'. */
  signature_scheme: SignatureScheme;
  /** During a rotation's overlap, the replaced secret, which signs too until previous_secret_until. */
  previous_secret_encrypted: Buffer | null;
  previous_secret_until: Date | null;
  /** false: the endpoint was disabled; the worker marks the delivery skipped instead of sending it. */
  enabled: boolean;
  /** The endpoint's custom headers as JSON text, secret values sealed; null: none. */
  headers: string | null;
}

type ClaimRow = Omit<ClaimedDelivery, 'body'> & { body: string | null };

/**
 * Claims due deliveries across all workers: the function herald_claim
 * (migration 013, where each step is explained; replaced since, see
 * docs/delivery.md) takes a lock that puts claims in a line, reaps leases
 * that ran out, then picks the oldest due deliveries of every endpoint with
 * room under its caps (per endpoint, per origin, its rate limit and
 * slow-down) and records them in `in_flight`.
 *
 * `now` is null in production (the database's clock); tests pass theirs.
 *
 * Each event's body comes once per claim, on the first of its deliveries
 * (the others have NULL), and becomes one Buffer that all of them share: a
 * claim of 500 deliveries of one 1 MiB event holds 1 MiB, not 500.
 *
 * How each endpoint signs (its secret, scheme, and the previous secret of a
 * rotation's overlap) and its custom headers come with each row, read by the
 * function's last statement after it took the claims' lock: a rotation is
 * seen whole or not at all, and an endpoint created while the claim waited
 * for its turn is read like any other.
 */
export async function claimDeliveries(
  db: Queryable,
  p: {
    limit: number;
    leaseMs: number;
    endpointCap: number;
    originCap: number;
    now: Date | null;
    /** Names the claim, so that a worker that never saw its answer can give it back (`giveBackClaim`); a fresh one unless given. */
    claimId?: string;
  },
): Promise<ClaimedDelivery[]> {
  const { rows } = await db.query<ClaimRow>(
    `SELECT * FROM herald_claim($1, $2, $3, $4, $5, $6)`,
    [p.now, p.limit, p.leaseMs, p.endpointCap, p.originCap, p.claimId ?? randomUUID()],
    { name: 'herald_claim_v4' },
  );
  const bodies = new Map<string, Buffer>();
  for (const r of rows) if (r.body !== null) bodies.set(eventKey(r.account_id, r.event_id), Buffer.from(r.body, 'utf8'));
  // In place: a copy of every claimed row was garbage the moment it was made.
  for (const r of rows) (r as unknown as ClaimedDelivery).body = bodies.get(eventKey(r.account_id, r.event_id))!;
  return rows as unknown as ClaimedDelivery[];
}

/**
 * Milliseconds, on the database's clock, until the next pending delivery not
 * in flight comes due; undefined: none; 0: one is due now. Deliveries in
 * flight are left out: their results, or the reaping of their lost leases,
 * wake the worker anyway.
 *
 * The oldest pending deliveries are often the ones in flight, so it reads
 * one more than are in flight, in due order, and takes the first not among
 * them. EXCEPT, not a join: it compares the two sets by hashing or sorting,
 * whatever the plan thinks of in_flight's size, where a join planned while
 * in_flight was empty scanned all of it once per row.
 */
export async function nextDueIn(db: Queryable, now: Date | null): Promise<number | undefined> {
  const { rows } = await db.query<{ ms: number | null }>(
    `WITH head AS (
       SELECT d.id FROM deliveries d WHERE d.state = 'pending'
        ORDER BY d.next_attempt_at
        LIMIT (SELECT count(*) FROM in_flight) + 1
     ), free AS (
       SELECT h.id FROM head h EXCEPT SELECT f.delivery_id FROM in_flight f
     )
     SELECT ceil(extract(epoch FROM (min(d.next_attempt_at) - COALESCE($1::timestamptz, now()))) * 1000)::float8 AS ms
       FROM free JOIN deliveries d ON d.id = free.id`,
    [now],
    { name: 'herald_next_due_in' },
  );
  const ms = rows[0]?.ms;
  return ms === undefined || ms === null ? undefined : Math.max(0, Number(ms));
}

/**
 * Embedded engine at start-up only: the data-directory lock proves no other
 * process holds a lease, so every lease left behind was lost (its process
 * died). Reaps them all, as a claim reaps expired ones. Returns how many.
 */
export async function reapAllLeases(db: Queryable, now: Date | null): Promise<number> {
  const { rows } = await db.query<{ n: number }>(`SELECT herald_reap_leases($1, true) AS n`, [now]);
  return Number(rows[0]!.n);
}

/**
 * Gives back a claim whose answer the worker never got (its query failed or
 * timed out on the worker's side, and may have committed on the server all
 * the same): its deliveries leave `in_flight` with no loss counted, due again
 * as they were, and if the server has not run the claim yet, it takes
 * nothing when it does. Returns how many deliveries it gave back.
 */
export async function giveBackClaim(db: Queryable, claimId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(`SELECT herald_give_back_claim($1) AS n`, [claimId]);
  return Number(rows[0]!.n);
}
