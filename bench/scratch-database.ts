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
import { cpuMs as processCpuMs } from './proc-cpu.ts';

/** What the server process behind `db`'s connection did while `work` ran, per `per` units of work. */
export interface ServerCost {
  cpuMs: number;
  wallMs: number;
  walKiB: number;
  buffersHit: number;
  buffersRead: number;
}

/**
 * Runs `work` and measures, from outside it: the CPU time of the server
 * process behind `db`'s one connection (from /proc, so the server must be on
 * this machine), wall time, WAL written (the whole server's: run it while
 * nothing else writes to that PostgreSQL), and buffers hit and read in this
 * database (pg_stat_database). Each figure is divided by `per` and multiplied
 * by 1,000. WAL and buffers hold still while the machine's speed drifts;
 * CPU and wall time do not.
 */
export async function measureServer(db: Db, per: number, work: () => Promise<void>): Promise<ServerCost> {
  const pid = (await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
  const cpu = () => processCpuMs([pid]);
  const counters = async () => {
    // A backend hands its counters to pg_stat_database at most once a second
    // unless told to: without this, the figures depend on the timing.
    await db.query('SELECT pg_stat_force_next_flush()');
    return (
      await db.query<{ lsn: string; hit: string; read: string }>(
        `SELECT pg_current_wal_lsn()::text AS lsn, blks_hit::text AS hit, blks_read::text AS read FROM pg_stat_database WHERE datname = current_database()`,
      )
    ).rows[0]!;
  };
  const c0 = await counters();
  const cpu0 = cpu();
  const t0 = performance.now();
  await work();
  const wallMs = performance.now() - t0;
  const cpuMs = cpu() - cpu0;
  const c1 = await counters();
  const wal = Number((await db.query<{ n: string }>('SELECT pg_wal_lsn_diff($1::pg_lsn, $2::pg_lsn)::text AS n', [c1.lsn, c0.lsn])).rows[0]!.n);
  const k = 1000 / per;
  return {
    cpuMs: cpuMs * k,
    wallMs: wallMs * k,
    walKiB: (wal * k) / 1024,
    buffersHit: (Number(c1.hit) - Number(c0.hit)) * k,
    buffersRead: (Number(c1.read) - Number(c0.read)) * k,
  };
}

/** One row of a Markdown table: the label, then the figures rounded. */
export const costRow = (label: string, c: ServerCost) =>
  `| ${label} | ${[c.cpuMs, c.wallMs, c.walKiB, c.buffersHit, c.buffersRead].map((x) => Math.round(x).toLocaleString('en')).join(' | ')} |`;

export const COST_HEADER = 'server CPU ms | wall ms | WAL KiB | buffers hit | buffers read |';

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
          `INSERT INTO endpoints (id, account_id, url, origin, event_types, secret_encrypted, secret_hint) VALUES ($1, $2, 'https://127.0.0.1/', 'https://127.0.0.1', '{shipment.created}', '\\x00', 'x')`,
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
