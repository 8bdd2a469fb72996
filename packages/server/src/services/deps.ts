import type { AccountLimits, RetentionConfig } from '../config.ts';
import type { AddressPolicy } from '../core/address-policy.ts';
import { databaseTime, type Clock } from '../core/clock.ts';
import { UuidV7Maker } from '../core/ids.ts';
import { PasswordHasher } from '../core/passwords.ts';
import { SchemaValidator } from '../core/schema-validator.ts';
import type { SetupToken } from '../core/setup-token.ts';
import type { Metrics } from '../metrics/metrics.ts';
import type { Db } from '../storage/db.ts';
import { ApiKeyCache } from './api-key-cache.ts';
import { EventCatalog } from './catalog.ts';
import { newWorkAnnouncer, type NewWork } from './new-work.ts';
import { PublishQueue } from './publish-queue.ts';

/** What the operations below need, passed in by the composition root. */
export interface ServiceDeps {
  db: Db;
  /** The operator key that encrypts signing secrets at rest. */
  encryptionKey: Buffer;
  clock: Clock;
  validator: SchemaValidator;
  /** Which networks webhooks may be sent to (public addresses only, unless the operator allows more). */
  addresses: AddressPolicy;
  /** Hashes and checks panel passwords, a few at a time (one per process). */
  passwords: PasswordHasher;
  /**
   * How long finished deliveries are kept (HERALD_RETENTION_DAYS,
   * HERALD_RETENTION_UNDELIVERED_DAYS), which bounds how far back recovery
   * reaches; the configuration's defaults otherwise.
   */
  retention?: RetentionConfig;
  /** What one account may make Herald hold and send; the configuration's defaults otherwise. */
  limits?: AccountLimits;
  /** First-run setup's token, in an API process: spent as soon as a user exists, however it was made. */
  setupToken?: SetupToken;
  /** API keys recently seen valid (one cache per process: a revocation here forgets the key at once). */
  apiKeys: ApiKeyCache;
  /** Event types once found. */
  catalog: EventCatalog;
  /** Wakes idle dispatchers once new deliveries are committed. */
  newWork: NewWork;
  /** Group commit for single-event publishes (one queue per process). */
  publishQueue: PublishQueue;
  /** Time-ordered ids for new events and attempts. */
  ids: UuidV7Maker;
  /** The process's metrics (events published); absent in tools and tests that count nothing. */
  metrics?: Metrics;
}

/** What only the caller can say; createServiceDeps builds the rest. */
export interface ServiceDepsOptions {
  db: Db;
  encryptionKey: Buffer;
  clock: Clock;
  addresses: AddressPolicy;
  limits?: AccountLimits;
  setupToken?: SetupToken;
  /** Tests pass their own (a small one, or one that counts). */
  passwords?: PasswordHasher;
  metrics?: Metrics;
}

/**
 * Builds the services' shared parts once: the composition root (main.ts)
 * calls it, and so do the CLI's direct operator commands and the tests'
 * Herald, so none of them assembles these on its own. The caches and queues
 * in it are per process: build it once and pass it on (the admin socket
 * serves with the API's, so its revocations reach the API's key cache).
 */
export function createServiceDeps(options: ServiceDepsOptions): ServiceDeps {
  const { db, passwords, ...rest } = options;
  const newWork = newWorkAnnouncer(db);
  return {
    ...rest,
    db,
    validator: new SchemaValidator(),
    passwords: passwords ?? new PasswordHasher(),
    apiKeys: new ApiKeyCache(),
    catalog: new EventCatalog(db),
    newWork,
    publishQueue: new PublishQueue(db, newWork, { now: () => databaseTime(options.clock) }),
    ids: new UuidV7Maker(),
  };
}
