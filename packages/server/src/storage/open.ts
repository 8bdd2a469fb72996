import { join } from 'node:path';
import { DEFAULT_DATABASE_TIMEOUT_MS, type Config } from '../config.ts';
import { BUILTIN_EVENT_TYPES } from '../core/event-types.ts';
import type { Db } from './db.ts';
import { acquireDataDirLock } from './data-dir-lock.ts';
import { checkEncryptionKey, embeddedKeySource, type KeySource, recordEncryptionKey } from './encryption-key.ts';
import { assertSchemaKnown, migrate } from './migrate.ts';
import { openPglite } from './pglite.ts';
import { openPostgres } from './postgres.ts';
import { makeDirPrivate } from './private-files.ts';
import { upsertBuiltinEventTypes } from './queries/event-types.ts';

export interface Storage {
  db: Db;
  /** The operator key, checked against the database's fingerprint of it. */
  encryptionKey: Buffer;
  /** The migrations this open applied. */
  applied: number[];
  close(): Promise<void>;
}

/** Brings the schema up to date and the built-in event types with it. */
export async function prepareDatabase(db: Db): Promise<number[]> {
  const applied = await migrate(db);
  await assertSchemaKnown(db);
  await upsertBuiltinEventTypes(db, BUILTIN_EVENT_TYPES);
  return applied;
}

/**
 * The key first: a key that is refused leaves the database exactly as it was,
 * schema included, so the operator can still go back to the Herald that ran it.
 */
async function openDatabase(db: Db, source: KeySource): Promise<{ encryptionKey: Buffer; applied: number[] }> {
  const encryptionKey = await checkEncryptionKey(db, source);
  const applied = await prepareDatabase(db);
  await recordEncryptionKey(db, encryptionKey, source);
  return { encryptionKey, applied };
}

/**
 * Opens the configured engine, checks the operator key, then brings the schema
 * up to date: PostgreSQL when DATABASE_URL is set, with HERALD_ENCRYPTION_KEY;
 * else PGlite in `<dataDir>/pgdata`, locked against a second process and
 * private to the user Herald runs as, its key in `<dataDir>/encryption.key`
 * (generated, mode 0600, for a new database) unless HERALD_ENCRYPTION_KEY is set.
 */
export interface OpenOptions {
  /** Pool size (PostgreSQL). */
  poolSize?: number;
  /** Told about connection failures no query reports (PostgreSQL): see PostgresOptions.onError. */
  onError?: (err: Error, what: string) => void;
}

export async function openStorage(
  config: Pick<Config, 'databaseUrl' | 'dataDir' | 'encryptionKey'> & { databaseTimeoutMs?: number },
  options: OpenOptions = {},
): Promise<Storage> {
  if (config.databaseUrl) {
    const timeoutMs = config.databaseTimeoutMs ?? DEFAULT_DATABASE_TIMEOUT_MS;
    // The key check and the migrations on a connection of their own without
    // a query timeout: a migration of a large table, or the wait for another
    // process's migration, may take longer than any query should.
    const setup = await openPostgres({ connectionString: config.databaseUrl, max: 1, connectTimeoutMs: timeoutMs, onError: options.onError });
    let prepared: { encryptionKey: Buffer; applied: number[] };
    try {
      prepared = await openDatabase(setup, { key: config.encryptionKey, setting: 'HERALD_ENCRYPTION_KEY' });
    } finally {
      await setup.close();
    }
    const db = await openPostgres({ connectionString: config.databaseUrl, max: options.poolSize, timeoutMs, onError: options.onError });
    return { db, ...prepared, close: () => db.close() };
  }
  const { dataDir } = config;
  const lock = acquireDataDirLock(dataDir);
  let db: Db | undefined;
  try {
    makeDirPrivate(dataDir);
    const source = config.encryptionKey ? { key: config.encryptionKey, setting: 'HERALD_ENCRYPTION_KEY' } : embeddedKeySource(dataDir);
    db = await openPglite({ dataDir: join(dataDir, 'pgdata') });
    const { encryptionKey, applied } = await openDatabase(db, source);
    // PGlite has unpacked or rewritten files with modes of its own by now.
    makeDirPrivate(dataDir);
    const opened = db;
    return {
      db,
      encryptionKey,
      applied,
      async close() {
        try {
          await opened.close();
          makeDirPrivate(dataDir);
        } finally {
          lock.release();
        }
      },
    };
  } catch (err) {
    await db?.close().catch(() => {});
    lock.release();
    throw err;
  }
}
