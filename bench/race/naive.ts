/**
 * The sender a team writes in an afternoon: the events in a PostgreSQL table,
 * workers that lock a batch with SKIP LOCKED, send it with the global fetch,
 * log each attempt and mark the rows, all in the batch's transaction.
 * Tuning: 8 loops, 50 rows each; fetch keeps its own defaults, but for a
 * timeout of 10 s per request, as every contender has.
 */
import pg from 'pg';
import { backlog, contend, destination, REQUEST_TIMEOUT_MS, settings, signed } from './contender.ts';

const LOOPS = 8;
const BATCH = 50;
const pool = new pg.Pool({ connectionString: settings.databaseUrl, max: LOOPS + 1 });

async function prepare(): Promise<void> {
  await pool.query(`
    CREATE TABLE jobs (id bigserial PRIMARY KEY, url text NOT NULL, body text NOT NULL, state text NOT NULL DEFAULT 'pending',
                       attempts int NOT NULL DEFAULT 0, next_attempt_at timestamptz NOT NULL DEFAULT now());
    CREATE INDEX jobs_due ON jobs (next_attempt_at) WHERE state = 'pending';
    CREATE TABLE attempts (id bigserial PRIMARY KEY, job_id bigint NOT NULL REFERENCES jobs, status int, error text,
                           at timestamptz NOT NULL DEFAULT now());`);
  const bodies = backlog(settings.deliveries);
  for (let i = 0; i < bodies.length; i += 1000) {
    const chunk = bodies.slice(i, i + 1000);
    await pool.query('INSERT INTO jobs (url, body) SELECT * FROM unnest($1::text[], $2::text[])', [chunk.map((_, j) => destination(i + j)), chunk]);
  }
}

async function post(url: string, body: string): Promise<{ status: number | null; error: string | null }> {
  try {
    const res = await fetch(url, { method: 'POST', headers: signed(body), body, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    await res.arrayBuffer();
    return { status: res.status, error: null };
  } catch (err) {
    return { status: null, error: (err as Error).message };
  }
}

async function loop(): Promise<void> {
  for (;;) {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      const { rows } = await client.query<{ id: string; url: string; body: string; attempts: number }>(
        `SELECT id, url, body, attempts FROM jobs WHERE state = 'pending' AND next_attempt_at <= now()
          ORDER BY next_attempt_at LIMIT $1 FOR UPDATE SKIP LOCKED`,
        [BATCH],
      );
      const results = await Promise.all(rows.map((r) => post(r.url, r.body)));
      await client.query('INSERT INTO attempts (job_id, status, error) SELECT * FROM unnest($1::bigint[], $2::int[], $3::text[])', [
        rows.map((r) => r.id),
        results.map((r) => r.status),
        results.map((r) => r.error),
      ]);
      const ok = (r: { status: number | null }) => r.status !== null && r.status < 300;
      await client.query(
        `UPDATE jobs j SET state = CASE WHEN v.ok THEN 'delivered' WHEN j.attempts + 1 >= 7 THEN 'failed' ELSE 'pending' END,
                attempts = j.attempts + 1, next_attempt_at = now() + (2 ^ j.attempts) * interval '1 second'
           FROM unnest($1::bigint[], $2::bool[]) AS v (id, ok) WHERE j.id = v.id`,
        [rows.map((r) => r.id), results.map(ok)],
      );
      await client.query('COMMIT');
      if (rows.length === 0) await new Promise((r) => setTimeout(r, 100));
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      console.error(err);
    } finally {
      client.release();
    }
  }
}

contend(
  prepare,
  () => {
    for (let i = 0; i < LOOPS; i++) void loop();
  },
  (body) => pool.query('INSERT INTO jobs (url, body) VALUES ($1, $2)', [settings.url, body]),
);
