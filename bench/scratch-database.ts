/**
 * A PostgreSQL database of a bench's own: created, migrated, given one account
 * and the endpoints asked for, handed to `use`, and dropped afterwards
 * whatever happens. For the benches that time one statement (bench:claim,
 * bench:record).
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Db } from '../packages/server/src/storage/db.ts';
import { prepareDatabase } from '../packages/server/src/storage/open.ts';
import { openPostgres } from '../packages/server/src/storage/postgres.ts';

export const BENCH_ACCOUNT = '00000000-0000-4000-8000-000000000001';

export async function withScratchDatabase<T>(adminUrl: string, prefix: string, endpointIds: readonly string[], use: (db: Db) => Promise<T>): Promise<T> {
  const name = `herald_bench_${prefix}_${randomBytes(4).toString('hex')}`;
  // One administrative connection for the whole run: it creates the database and drops it.
  const admin = new pg.Client({ connectionString: adminUrl });
  // Idle for most of the run: a server that closes it must not crash the bench before the drop.
  admin.on('error', (err) => console.error(`bench: the administrative connection failed: ${err.message}`));
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
    const url = new URL(adminUrl);
    url.pathname = `/${name}`;
    const db = await openPostgres({ connectionString: url.toString(), max: 1 });
    try {
      await prepareDatabase(db);
      // Autovacuum would otherwise join the measurement whenever a round's rows trigger it.
      for (const table of ['events', 'deliveries', 'attempts']) await db.query(`ALTER TABLE ${table} SET (autovacuum_enabled = off)`);
      await db.query(`INSERT INTO accounts (id, name) VALUES ($1, 'bench')`, [BENCH_ACCOUNT]);
      for (const id of endpointIds) {
        await db.query(
          `INSERT INTO endpoints (id, account_id, url, event_types, secret_encrypted, secret_hint) VALUES ($1, $2, 'https://127.0.0.1/', '{shipment.created}', '\\x00', 'x')`,
          [id, BENCH_ACCOUNT],
        );
      }
      return await use(db);
    } finally {
      await db.close();
    }
  } finally {
    // A failed drop is reported, not thrown: it must not hide an error from `use`.
    await admin
      .query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      .catch((err: Error) => console.error(`bench: could not drop ${name}: ${err.message}`))
      .finally(() => admin.end());
  }
}
