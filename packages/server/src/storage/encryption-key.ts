import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { decryptSecret, hashesEqual, keyFingerprint } from '../core/secrets.ts';
import { ConfigError } from '../errors.ts';
import type { Queryable } from './db.ts';
import { anySealedSecret, getKeyFingerprint, recordKeyFingerprint } from './queries/encryption-key.ts';

/** Where the operator key comes from, named as the operator knows it. */
export interface KeySource {
  /** Absent: the embedded key file does not exist (yet). */
  key: Buffer | undefined;
  /** `HERALD_ENCRYPTION_KEY`, or the path of the data directory's `encryption.key`. */
  setting: string;
  /** Makes a new key where there is none (the embedded engine only). */
  create?: () => Buffer;
}

/** The embedded engine's key file, read if it is there; created only when `checkEncryptionKey` allows it. */
export function embeddedKeySource(dataDir: string): KeySource {
  const path = join(dataDir, 'encryption.key');
  let text: string | undefined;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const key = text === undefined ? undefined : Buffer.from(text.trim(), 'base64');
  if (key && key.length !== 32) throw new ConfigError(path, 'does not hold a 32-byte base64 key; restore it from a backup of the data directory');
  return {
    key,
    setting: path,
    create() {
      const fresh = randomBytes(32);
      writeFileSync(path, `${fresh.toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
      return fresh;
    },
  };
}

function restoreHint(source: KeySource): string {
  return source.setting === 'HERALD_ENCRYPTION_KEY'
    ? 'Set HERALD_ENCRYPTION_KEY to the key this database was first started with'
    : 'Restore encryption.key from a backup of this data directory';
}

const NO_RECOVERY = 'without that key the signing secrets cannot be decrypted, and Herald will not replace it (README, "The encryption key")';

function refusals(source: KeySource): { wrong: () => ConfigError; missing: () => ConfigError } {
  return {
    wrong: () => new ConfigError(source.setting, `is not the key this database's signing secrets are encrypted under. ${restoreHint(source)}; ${NO_RECOVERY}`),
    missing: () => new ConfigError(source.setting, `is missing, but this database holds data encrypted under its key. ${restoreHint(source)}; ${NO_RECOVERY}`),
  };
}

/**
 * Returns the operator key after making sure it is the one the database's
 * signing secrets are encrypted under, and refuses to start otherwise:
 *
 * - a recorded fingerprint must match the key given;
 * - without one (a new database, or one from before fingerprints), a sealed
 *   secret, if there is any, must decrypt under the key;
 * - a key is generated only for a database with neither a fingerprint nor a
 *   secret, so a lost key file is never silently replaced.
 *
 * It runs before migrations and writes nothing to the database: a refused key
 * leaves the schema as it was, so the Herald that ran it can still open it.
 * Before migration 010 there is no fingerprint table, and the stored secret
 * alone decides. `recordEncryptionKey` records the fingerprint after migrating.
 * Errors name the setting or file to fix and never contain a key.
 */
export async function checkEncryptionKey(db: Queryable, source: KeySource): Promise<Buffer> {
  const { wrong, missing } = refusals(source);
  const recorded = await getKeyFingerprint(db);
  if (recorded) {
    if (!source.key) throw missing();
    if (!hashesEqual(keyFingerprint(source.key), recorded)) throw wrong();
    return source.key;
  }
  const sealed = await anySealedSecret(db);
  if (sealed) {
    if (!source.key) throw missing();
    try {
      decryptSecret(source.key, sealed.secret_encrypted, sealed.id);
    } catch {
      throw wrong();
    }
  }
  const key = source.key ?? source.create?.();
  if (!key) throw missing();
  return key;
}

/**
 * Records the fingerprint of a key `checkEncryptionKey` accepted, once the
 * schema has its table. Another process may have recorded its key first
 * (two starting on a new database); then it has to be this one.
 */
export async function recordEncryptionKey(db: Queryable, key: Buffer, source: KeySource): Promise<void> {
  const fingerprint = keyFingerprint(key);
  if (!hashesEqual(await recordKeyFingerprint(db, fingerprint), fingerprint)) throw refusals(source).wrong();
}
