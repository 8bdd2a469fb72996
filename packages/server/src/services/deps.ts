import type { AccountLimits } from '../config.ts';
import type { AddressPolicy } from '../core/address-policy.ts';
import type { Clock } from '../core/clock.ts';
import type { PasswordHasher } from '../core/passwords.ts';
import type { SchemaValidator } from '../core/schema-validator.ts';
import type { SetupToken } from '../core/setup-token.ts';
import type { Db } from '../storage/db.ts';

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
  /** What one account may make Herald hold and send; the configuration's defaults otherwise. */
  limits?: AccountLimits;
  /** First-run setup's token, in an API process: spent as soon as a user exists, however it was made. */
  setupToken?: SetupToken;
  /** How long deliveries are kept, which bounds how far back recovery reaches; DEFAULT_RETENTION otherwise. */
  retention?: Retention;
}

/**
 * How long Herald keeps finished deliveries (with their events and
 * attempts), in days: succeeded ones for HERALD_RETENTION_DAYS, failed and
 * skipped ones, which can still be recovered, for HERALD_RETENTION_UNDELIVERED_DAYS.
 */
export interface Retention {
  succeededDays: number;
  undeliveredDays: number;
}

export const DEFAULT_RETENTION: Readonly<Retention> = Object.freeze({ succeededDays: 30, undeliveredDays: 90 });
