import type { DispatcherConfig } from '../config.ts';
import type { Db } from '../storage/db.ts';
import { claimDeliveries, giveBackClaim, nextDueIn } from '../storage/queries/claim-deliveries.ts';
import { DELIVERIES_CHANNEL } from '../storage/queries/deliveries.ts';
import { recordResults } from '../storage/queries/record-results.ts';
import type { DispatcherParts } from './dispatcher.ts';

/** The dispatcher's parts that talk to the database: claiming, the next due time, recording, and new-work notifications. */
export function databaseParts(db: Db, config: DispatcherConfig): Pick<DispatcherParts, 'claim' | 'giveBack' | 'nextDueIn' | 'record' | 'listen'> {
  return {
    claim: (p) => claimDeliveries(db, p),
    giveBack: (claimId) => giveBackClaim(db, claimId),
    nextDueIn: (now) => nextDueIn(db, now),
    record: (results, now) => recordResults(db, { results, now, disableAfter: config.disableAfter, endpointCap: config.endpointConcurrency }),
    listen: (wake) => db.listen(DELIVERIES_CHANNEL, wake),
  };
}
