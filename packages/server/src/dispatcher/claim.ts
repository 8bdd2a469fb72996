import type { Db } from '../storage/db.ts';
import { leaseDeliveries, selectDueForUpdate, type ClaimedDelivery } from '../storage/queries/claim-deliveries.ts';

export interface Claim extends ClaimedDelivery {
  /** All attempts were already used (its last worker died mid-attempt): fail it, send nothing. */
  exhausted: boolean;
}

/**
 * One claim: lock due rows (SKIP LOCKED), keep those this worker has room
 * for (per-endpoint cap), lease them. One short transaction.
 */
export async function claimDue(
  db: Db,
  p: { now: Date; limit: number; leaseMs: number; maxAttempts: number; endpointCap: number; inFlightByEndpoint: ReadonlyMap<string, number> },
): Promise<Claim[]> {
  const busyEndpoints = [...p.inFlightByEndpoint].filter(([, n]) => n >= p.endpointCap).map(([id]) => id);
  return db.transaction(async (tx) => {
    // Scan a little past the limit so one endpoint's backlog cannot hide the others'.
    const due = await selectDueForUpdate(tx, { now: p.now, limit: Math.min(p.limit * 4, 2000), busyEndpoints });
    const taken = new Map<string, number>();
    const chosen = new Map<string, number>();
    for (const d of due) {
      const used = (p.inFlightByEndpoint.get(d.endpoint_id) ?? 0) + (taken.get(d.endpoint_id) ?? 0);
      if (used >= p.endpointCap) continue;
      taken.set(d.endpoint_id, (taken.get(d.endpoint_id) ?? 0) + 1);
      chosen.set(d.id, d.attempts);
      if (chosen.size >= p.limit) break;
    }
    if (chosen.size === 0) return [];
    const leased = await leaseDeliveries(tx, {
      ids: [...chosen.keys()],
      now: p.now,
      leaseUntil: new Date(p.now.getTime() + p.leaseMs),
      maxAttempts: p.maxAttempts,
    });
    return leased.map((d) => ({ ...d, exhausted: (chosen.get(d.id) ?? 0) >= p.maxAttempts }));
  });
}
