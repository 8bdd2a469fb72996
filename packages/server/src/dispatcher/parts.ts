import type { DispatcherConfig } from '../config.ts';
import type { Metrics } from '../metrics/metrics.ts';
import type { Db } from '../storage/db.ts';
import { claimDeliveries, giveBackClaim, nextDueIn } from '../storage/queries/claim-deliveries.ts';
import { DELIVERIES_CHANNEL } from '../storage/queries/deliveries.ts';
import { recordResults } from '../storage/queries/record-results.ts';
import type { DispatcherParts } from './dispatcher.ts';
import { observeResults, type AttemptLogger } from './observe.ts';

/**
 * The dispatcher's parts that talk to the database: claiming, the next due
 * time, recording, and new-work notifications. Given `observe`, each written
 * batch of results is counted and its attempts logged (`observeResults`).
 */
export function databaseParts(
  db: Db,
  config: DispatcherConfig,
  observe?: { metrics?: Metrics; log?: AttemptLogger },
): Pick<DispatcherParts, 'claim' | 'giveBack' | 'nextDueIn' | 'record' | 'listen'> {
  const record: DispatcherParts['record'] = (results, now) =>
    recordResults(db, { results, now, disableAfter: config.disableAfter, endpointCap: config.endpointConcurrency });
  return {
    claim: (p) => claimDeliveries(db, p),
    giveBack: (claimId) => giveBackClaim(db, claimId),
    nextDueIn: (now) => nextDueIn(db, now),
    record: observe ? observeResults(record, observe) : record,
    listen: (wake) => db.listen(DELIVERIES_CHANNEL, wake),
  };
}
