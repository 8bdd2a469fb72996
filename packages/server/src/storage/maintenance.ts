import type { Db } from './db.ts';
import { tableExists } from './queries/retention.ts';

/**
 * VACUUM, ANALYZE and the statistics check: the maintainer
 * (src/maintenance/maintainer.ts) decides when, in one process at a time.
 */

/** The tables every delivery writes to: they collect dead rows fastest. */
const BUSY_TABLES = ['deliveries', 'attempts', 'events', 'endpoints', 'idempotency_keys', 'sessions', 'attempt_log_grown'];

/**
 * Small tables that every delivery inserts into and deletes from: they are
 * all dead rows within seconds, so they are vacuumed far more often than
 * autovacuum's thresholds would. in_flight comes with the scheduler's
 * migration; a table not there yet is skipped.
 */
export const CHURNING_TABLES = ['in_flight', 'attempt_log_grown'];

/** How often the embedded engine is vacuumed and analysed. */
export const EMBEDDED_MAINTENANCE_MS = 10_000;

/**
 * VACUUM (ANALYZE) of the busy tables. PGlite runs PostgreSQL in single-user
 * mode, where autovacuum never runs: without this, every update leaves a dead
 * row behind for good, and the planner never gets statistics (reltuples stays
 * -1). In the benchmark (10,000 events × 10 endpoints) deliveries went from
 * 369/s to 1,141/s with a pass every 10 s (899/s every 30 s, but a lower p99
 * at a steady rate: a pass holds the one thread for a moment). On
 * PostgreSQL, autovacuum does this.
 */
export async function vacuumEmbedded(db: Db): Promise<void> {
  for (const table of [...BUSY_TABLES, 'in_flight']) {
    if (await tableExists(db, table)) await db.exec(`VACUUM (ANALYZE) ${table}`);
  }
}

/**
 * VACUUM of the churning tables on PostgreSQL, those that exist and the role
 * owns (PostgreSQL would only warn about the others), never waiting for a
 * lock. Returns the tables vacuumed.
 */
export async function vacuumChurningTables(db: Db, tables: readonly string[] = CHURNING_TABLES): Promise<string[]> {
  const { rows } = await db.query<{ relname: string }>(
    `SELECT c.relname FROM pg_class c
      WHERE c.oid = ANY (SELECT to_regclass(t) FROM unnest($1::text[]) AS t)
        AND pg_has_role(c.relowner, 'USAGE')
      ORDER BY c.relname`,
    [tables],
  );
  for (const { relname } of rows) await db.exec(`VACUUM (SKIP_LOCKED) ${relname}`);
  return rows.map((r) => r.relname);
}

/** How often Herald looks for tables whose statistics fell far behind, on PostgreSQL. */
export const STATISTICS_CHECK_MS = 5_000;

/** A table is analysed once it holds at least this many rows and twice as many as its last ANALYZE counted. */
export const STATISTICS_MIN_ROWS = 1_000;

/**
 * Once a table's statistics count this many rows (pg_class.reltuples, which
 * VACUUM sets too), Herald leaves the table to autovacuum. The plans of the
 * hot statements go wrong on near-empty statistics; made on 10,000 rows or
 * more, they stay right as the table grows (the planner scales the counted
 * rows to the table's current size, and key lookups only get more attractive),
 * and autovacuum re-analyses after about a tenth of the rows changed, throttled,
 * which Herald's ANALYZE is not. One ANALYZE of a big table costs real time:
 * in the benchmark, up to a second of a core for attempts at 36,000 rows in
 * the middle of the burst, and an ANALYZE of events at 29,000 rows during the
 * steady phase.
 */
export const STATISTICS_MAX_ROWS = 10_000;

/** Key of the transaction-level advisory lock that lets one Herald process at a time do it. */
export const STATISTICS_LOCK = 0x4845_5241; // "HERA"

/**
 * ANALYZE of each busy table that has at least doubled since its last
 * ANALYZE (never analysed counts as empty) and holds at least `minRows`,
 * unless that last ANALYZE already counted `maxRows` or more. Returns the
 * tables analysed.
 *
 * Autovacuum does this on PostgreSQL, but only once a minute at most and
 * only after its own thresholds, so a new database that takes a burst runs
 * for a minute on statistics of near-empty tables. Each connection keeps
 * the generic plan of every prepared hot statement, made from the
 * statistics it found, until an ANALYZE invalidates it: the benchmark
 * caught plans that read every delivery by sequential scan to record
 * 16 attempts. Analysing at each doubling replans them while the tables are
 * still small and stops once they are not (`STATISTICS_MAX_ROWS`): it is
 * about a young table's growth, not churn, so a small table updated all the
 * time (endpoints) is left to autovacuum, and so is a grown one.
 *
 * Only tables the role owns (ANALYZE needs that; otherwise PostgreSQL skips
 * them with a warning), never waiting for a lock: a table another process
 * is vacuuming or altering is skipped until the next pass.
 */
export async function analyzeStaleTables(
  db: Db,
  options: { tables?: readonly string[]; minRows?: number; maxRows?: number } = {},
): Promise<string[]> {
  return db.transaction(async (tx) => {
    // One Herald process at a time; the others find the lock taken and skip the pass.
    const { rows: lock } = await tx.query<{ got: boolean }>(`SELECT pg_try_advisory_xact_lock($1) AS got`, [STATISTICS_LOCK]);
    if (!lock[0]?.got) return [];
    const { rows } = await tx.query<{ relname: string }>(
      `SELECT s.relname FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
        WHERE s.schemaname = current_schema() AND s.relname = ANY ($1::text[])
          AND pg_has_role(c.relowner, 'USAGE')
          AND s.n_live_tup >= GREATEST($2::float8, 2 * c.reltuples::float8)
          AND c.reltuples < $3::float8
        ORDER BY s.relname`,
      [options.tables ?? BUSY_TABLES, options.minRows ?? STATISTICS_MIN_ROWS, options.maxRows ?? STATISTICS_MAX_ROWS],
    );
    if (rows.length === 0) return [];
    await tx.query(`SET LOCAL lock_timeout = '1s'`);
    for (const { relname } of rows) await tx.query(`ANALYZE (SKIP_LOCKED) ${relname}`);
    return rows.map((r) => r.relname);
  });
}
