import type { DispatcherConfig } from '../config.ts';
import type { Clock } from '../core/clock.ts';
import type { Metrics } from '../metrics/metrics.ts';
import type { Send } from '../outbound/send.ts';
import type { Db } from '../storage/db.ts';
import { claimDeliveries, giveBackClaim, nextDueIn, type ClaimedDelivery } from '../storage/queries/claim-deliveries.ts';
import { DELIVERIES_CHANNEL } from '../storage/queries/deliveries.ts';
import { eraseExpiredPreviousSecret } from '../storage/queries/endpoints.ts';
import { recordResults, type DeliveryResult } from '../storage/queries/record-results.ts';
import { observeResults, type AttemptLogger } from './observe.ts';
import type { Logger, WriteResults } from './record.ts';

/** The parts a dispatcher works with, passed in so that tests can drive or replace each. */
export interface DispatcherParts {
  config: DispatcherConfig;
  clock: Clock;
  log?: Logger;
  /** Opens signing secrets. */
  encryptionKey: Buffer;
  claim(p: Parameters<typeof claimDeliveries>[1]): Promise<ClaimedDelivery[]>;
  /** Gives back a claim whose answer never came (`giveBackClaim`): it may have committed all the same. */
  giveBack(claimId: string): Promise<unknown>;
  /** Milliseconds until the next delivery not in flight comes due (`nextDueIn`). */
  nextDueIn(now: Date | null): Promise<number | undefined>;
  send: Send;
  /** Writes one batch of results (`recordResults`), on the database's clock (`now`: null) or a test's. */
  record(results: readonly DeliveryResult[], now: Date | null): ReturnType<WriteResults>;
  /** Calls `wake` whenever new work is announced; resolves to a function that stops listening. */
  listen?(wake: () => void): Promise<() => Promise<void>>;
  /** Random source for the retries' jitter; tests pass a fixed one. */
  random?: () => number;
  /** Erases an endpoint's previous secret whose overlap ended by `now` (`eraseExpiredPreviousSecret`). */
  erasePreviousSecret?(endpointId: string, until: Date, now: Date): Promise<unknown>;
}

/**
 * The dispatcher's parts that talk to the database: claiming, the next due
 * time, recording, and new-work notifications. Given `observe`, each written
 * batch of results is counted and its attempts logged (`observeResults`).
 */
export function databaseParts(
  db: Db,
  config: DispatcherConfig,
  observe?: { metrics?: Metrics; log?: AttemptLogger },
): Pick<DispatcherParts, 'claim' | 'giveBack' | 'nextDueIn' | 'record' | 'listen' | 'erasePreviousSecret'> {
  const record: DispatcherParts['record'] = (results, now) =>
    recordResults(db, { results, now, disableAfter: config.disableAfter, endpointCap: config.endpointConcurrency });
  return {
    claim: (p) => claimDeliveries(db, p),
    giveBack: (claimId) => giveBackClaim(db, claimId),
    nextDueIn: (now) => nextDueIn(db, now),
    record: observe ? observeResults(record, observe) : record,
    listen: (wake) => db.listen(DELIVERIES_CHANNEL, wake),
    erasePreviousSecret: (endpointId, until, now) => eraseExpiredPreviousSecret(db, endpointId, until, now),
  };
}
