import { randomBytes } from 'node:crypto';
import { after } from 'node:test';
import pg from 'pg';
import type { Db, Engine } from '../../src/storage/db.ts';
import { openPglite } from '../../src/storage/pglite.ts';
import { openPostgres } from '../../src/storage/postgres.ts';
import { prepareDatabase } from '../../src/storage/open.ts';

/**
 * The engines the suite runs on: PGlite always, PostgreSQL when
 * HERALD_TEST_DATABASE_URL names a server (CI sets it). Each test gets its
 * own database made from a migrated template: a copy of a PGlite data
 * directory, or CREATE DATABASE … TEMPLATE on PostgreSQL.
 */
export const ENGINES: Engine[] = process.env.HERALD_TEST_DATABASE_URL ? ['pglite', 'postgres'] : ['pglite'];

export interface TestDb extends Db {
  /** PostgreSQL URL of this test's database (postgres engine only). */
  url?: string;
}

let pgliteTemplate: Promise<Blob> | undefined;
let postgresTemplate: Promise<string> | undefined;
const adminUrl = () => process.env.HERALD_TEST_DATABASE_URL!;

// Registered at import, so it belongs to the file's root and runs once, last.
after(async () => {
  if (!postgresTemplate) return;
  const name = await postgresTemplate;
  await admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
});

function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

async function admin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl() });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** Drops databases left by test processes that no longer run (killed runs leave them). */
async function dropLeftovers(): Promise<void> {
  await admin(async (c) => {
    const { rows } = await c.query<{ datname: string }>(`SELECT datname FROM pg_database WHERE datname ~ '^herald_(tpl|t|s)_[0-9]+_'`);
    for (const { datname } of rows) {
      const pid = Number(datname.split('_')[2]);
      let alive = true;
      try {
        process.kill(pid, 0);
      } catch (err) {
        alive = (err as NodeJS.ErrnoException).code === 'EPERM';
      }
      if (!alive) await c.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`).catch(() => {});
    }
  });
}

async function makePostgresTemplate(): Promise<string> {
  await dropLeftovers();
  const name = `herald_tpl_${process.pid}_${randomBytes(3).toString('hex')}`;
  await admin((c) => c.query(`CREATE DATABASE ${name}`));
  const db = await openPostgres({ connectionString: withDatabase(adminUrl(), name) });
  await prepareDatabase(db);
  await db.close();
  return name;
}

async function makePgliteTemplate(): Promise<Blob> {
  const db = await openPglite();
  await prepareDatabase(db);
  const blob = await db.dump();
  await db.close();
  return blob;
}

/** A fresh, migrated database for one test; closing it drops it. */
export async function createTestDb(engine: Engine): Promise<TestDb> {
  if (engine === 'pglite') {
    pgliteTemplate ??= makePgliteTemplate();
    return openPglite({ loadDataDir: await pgliteTemplate });
  }
  postgresTemplate ??= makePostgresTemplate();
  const template = await postgresTemplate;
  const name = `herald_t_${process.pid}_${randomBytes(4).toString('hex')}`;
  await admin((c) => c.query(`CREATE DATABASE ${name} TEMPLATE ${template}`));
  const url = withDatabase(adminUrl(), name);
  const db = await openPostgres({ connectionString: url, max: 20 });
  return {
    ...db,
    engine: 'postgres',
    url,
    async close() {
      await db.close();
      await admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    },
  };
}

/** Creates a scratch PostgreSQL database by name for process-level tests; returns its URL and a dropper. */
export async function createScratchPostgres(): Promise<{ url: string; drop(): Promise<void> }> {
  postgresTemplate ??= makePostgresTemplate();
  const template = await postgresTemplate;
  const name = `herald_s_${process.pid}_${randomBytes(4).toString('hex')}`;
  await admin((c) => c.query(`CREATE DATABASE ${name} TEMPLATE ${template}`));
  return { url: withDatabase(adminUrl(), name), drop: () => admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => {}) };
}
