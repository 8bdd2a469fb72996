import type { AccountLimits, RetentionConfig } from '../config.ts';
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
}
