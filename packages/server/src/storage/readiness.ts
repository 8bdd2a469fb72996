import { unavailableReason, type Db, type UnavailableReason } from './db.ts';
import { knownSchemaVersion } from './migrate.ts';

/** How long a readiness check waits for the database: a probe must answer quickly, whatever the database does. */
export const READINESS_TIMEOUT_MS = 2_000;

export type Readiness =
  | { ready: true; schema: number }
  | { ready: false; reason: UnavailableReason | 'schema_outdated' | 'schema_too_new'; detail: string };

/**
 * Whether this process can serve: the database answers within `timeoutMs`,
 * takes writes (not a standby in recovery, not read-only by default), and
 * holds exactly the migrations this code knows. Errors other than an
 * unavailable database are thrown.
 */
export async function checkReadiness(db: Db, timeoutMs = READINESS_TIMEOUT_MS): Promise<Readiness> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), timeoutMs);
  });
  const check = db.query<{ in_recovery: boolean; read_only: boolean; schema: number | null }>(
    `SELECT pg_is_in_recovery() AS in_recovery,
            current_setting('transaction_read_only') = 'on' OR current_setting('default_transaction_read_only') = 'on' AS read_only,
            (SELECT max(version) FROM herald_migrations) AS schema`,
  );
  let answer: Awaited<typeof check> | 'timeout';
  try {
    answer = await Promise.race([check, timedOut]);
  } catch (err) {
    const reason = unavailableReason(err);
    if (!reason) throw err;
    return { ready: false, reason, detail: `the database is unavailable (${reason})` };
  } finally {
    clearTimeout(timer);
  }
  // The query, if it still runs, ends by the pool's own timeout.
  if (answer === 'timeout') {
    check.catch(() => {});
    return { ready: false, reason: 'timeout', detail: `the database did not answer within ${timeoutMs} ms` };
  }
  const row = answer.rows[0]!;
  if (row.in_recovery) return { ready: false, reason: 'read_only', detail: 'the database is a standby in recovery: it refuses writes' };
  if (row.read_only) return { ready: false, reason: 'read_only', detail: 'the database is read-only (default_transaction_read_only is on)' };
  const known = await knownSchemaVersion();
  const schema = row.schema ?? 0;
  if (schema < known) return { ready: false, reason: 'schema_outdated', detail: `the database schema is at version ${schema}; this Herald needs ${known}: run herald migrate` };
  if (schema > known) return { ready: false, reason: 'schema_too_new', detail: `the database was migrated by a newer Herald (schema version ${schema}; this one knows up to ${known}): upgrade this process` };
  return { ready: true, schema };
}
