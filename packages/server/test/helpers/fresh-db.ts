import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Db, Engine } from '../../src/storage/db.ts';
import { openPglite } from '../../src/storage/pglite.ts';
import { openPostgres } from '../../src/storage/postgres.ts';

/**
 * An empty, never-migrated database (createTestDb hands out migrated copies),
 * for the tests of migrations themselves. `connect()` opens another
 * connection to the same database: a second pool on PostgreSQL, the same
 * instance on PGlite (which has exactly one connection).
 */
export interface EmptyDb {
  db: Db;
  connect(): Promise<Db>;
  close(): Promise<void>;
}

export async function createEmptyDb(engine: Engine): Promise<EmptyDb> {
  if (engine === 'pglite') {
    const db = await openPglite();
    return { db, connect: async () => db, close: () => db.close() };
  }
  const adminUrl = process.env.HERALD_TEST_DATABASE_URL!;
  const name = `herald_e_${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = async (sql: string) => {
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await admin(`CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const opened: Db[] = [];
  const connect = async () => {
    const db = await openPostgres({ connectionString: url.toString(), max: 2 });
    opened.push(db);
    return db;
  };
  const db = await connect();
  return {
    db,
    connect,
    async close() {
      for (const d of opened) await d.close();
      await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}
