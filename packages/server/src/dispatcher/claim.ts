import type { Queryable } from '../storage/db.ts';
import { claimDeliveries, type ClaimedDelivery } from '../storage/queries/claim-deliveries.ts';

// A bridge from the storage layer's claim to this dispatcher's older shape,
// kept until the dispatcher is rewritten against the claim directly.
export interface Claim extends ClaimedDelivery {
  /** This attempt's number (the claim's `attempt`). */
  attempts: number;
  /** Never true now: attempts are counted when answered, so a claimed delivery always has one left. */
  exhausted: boolean;
}

/** One claim for this worker: as many due deliveries as it has room for, within the caps. */
export async function claimDue(
  db: Queryable,
  p: { now: Date; limit: number; leaseMs: number; maxAttempts: number; endpointCap: number; inFlightByEndpoint: ReadonlyMap<string, number> },
): Promise<Claim[]> {
  // This dispatcher knows no origin cap: the largest the claim takes.
  const claimed = await claimDeliveries(db, { now: p.now, limit: p.limit, leaseMs: p.leaseMs, endpointCap: p.endpointCap, originCap: 2 ** 31 - 1 });
  for (const d of claimed) {
    (d as Claim).attempts = d.attempt;
    (d as Claim).exhausted = false;
  }
  return claimed as Claim[];
}
