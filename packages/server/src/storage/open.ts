import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config.ts';
import { BUILTIN_EVENT_TYPES } from '../core/event-types.ts';
import type { Db } from './db.ts';
import { acquireDataDirLock } from './data-dir-lock.ts';
import { assertSchemaKnown, migrate } from './migrate.ts';
import { openPglite } from './pglite.ts';
import { openPostgres } from './postgres.ts';
import { upsertBuiltinEventTypes } from './queries/event-types.ts';

export interface Storage {
  db: Db;
  encryptionKey: Buffer;
  close(): Promise<void>;
}

/**
 * The embedded default keeps its operator key beside the data, generated once
 * with mode 0600. Anyone who can read the directory can read the database
 * anyway; PostgreSQL deployments must pass HERALD_ENCRYPTION_KEY instead.
 */
function embeddedEncryptionKey(dataDir: string): Buffer {
  const path = join(dataDir, 'encryption.key');
  if (!existsSync(path)) {
    writeFileSync(path, `${randomBytes(32).toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
  }
  const key = Buffer.from(readFileSync(path, 'utf8').trim(), 'base64');
  if (key.length !== 32) throw new Error(`${path} does not hold a 32-byte base64 key; restore it from backup`);
  return key;
}

/** Brings the schema up to date and the built-in event types with it. */
export async function prepareDatabase(db: Db): Promise<number[]> {
  const applied = await migrate(db);
  await assertSchemaKnown(db);
  await upsertBuiltinEventTypes(db, BUILTIN_EVENT_TYPES);
  return applied;
}

/**
 * Opens the configured engine: PostgreSQL when DATABASE_URL is set, else
 * PGlite in `<dataDir>/pgdata`, locked against a second process.
 */
export async function openStorage(config: Pick<Config, 'databaseUrl' | 'dataDir' | 'encryptionKey'>, options: { poolSize?: number } = {}): Promise<Storage> {
  if (config.databaseUrl) {
    const db = await openPostgres({ connectionString: config.databaseUrl, max: options.poolSize });
    return { db, encryptionKey: config.encryptionKey!, close: () => db.close() };
  }
  const lock = acquireDataDirLock(config.dataDir);
  try {
    const encryptionKey = config.encryptionKey ?? embeddedEncryptionKey(config.dataDir);
    const db = await openPglite({ dataDir: join(config.dataDir, 'pgdata') });
    return {
      db,
      encryptionKey,
      async close() {
        await db.close();
        lock.release();
      },
    };
  } catch (err) {
    lock.release();
    throw err;
  }
}
