/**
 * A pg-boss 10 sender, as its documentation has it: a queue with retries and
 * back-off, jobs queued with `insert` in batches, and `work` handlers that
 * take jobs in batches. Each attempt's answer goes to an attempts table in
 * the same database. Tuning: 16 handlers of 64 jobs each, polling every
 * 0.5 s (pg-boss's shortest), a pool of 20 connections.
 */
import PgBoss from 'pg-boss';
import pg from 'pg';
import { agent, backlog, contend, destination, send, settings } from './contender.ts';

const QUEUE = 'webhooks';
const HANDLERS = 16;
const BATCH = 64;
const boss = new PgBoss({ connectionString: settings.databaseUrl, max: 20 });
const pool = new pg.Pool({ connectionString: settings.databaseUrl, max: 4 });
const client = agent();
boss.on('error', (err) => console.error(err));

async function prepare(): Promise<void> {
  await boss.start();
  await boss.createQueue(QUEUE, { name: QUEUE, retryLimit: 6, retryDelay: 1, retryBackoff: true });
  await pool.query('CREATE TABLE attempts (id bigserial PRIMARY KEY, job_id uuid NOT NULL, status int, error text, at timestamptz NOT NULL DEFAULT now())');
  const bodies = backlog(settings.deliveries);
  for (let i = 0; i < bodies.length; i += 1000) {
    await boss.insert(bodies.slice(i, i + 1000).map((body, j) => ({ name: QUEUE, data: { body, url: destination(i + j) } })));
  }
}

async function handle(jobs: PgBoss.Job<{ body: string; url: string }>[]): Promise<void> {
  const results = await Promise.all(jobs.map((j) => send(client, j.data.body, j.data.url)));
  await pool.query('INSERT INTO attempts (job_id, status, error) SELECT * FROM unnest($1::uuid[], $2::int[], $3::text[])', [
    jobs.map((j) => j.id),
    results.map((r) => r.status),
    results.map((r) => r.error),
  ]);
  // pg-boss fails or completes a batch as one: a batch with a failed request is retried whole.
  if (results.some((r) => r.status === null || r.status >= 300)) throw new Error('a request in the batch failed');
}

contend(
  prepare,
  async () => {
    for (let i = 0; i < HANDLERS; i++) await boss.work(QUEUE, { batchSize: BATCH, pollingIntervalSeconds: 0.5 }, handle);
  },
  (body) => boss.send(QUEUE, { body, url: settings.url }),
);
