import { Gauge, type Registry } from 'prom-client';
import type { Db, PoolStats } from '../storage/db.ts';
import { readBacklog, type Backlog } from '../storage/queries/metrics.ts';

/** A scrape waits this long for the database at most; Prometheus' own default timeout is 10 s. */
export const BACKLOG_TIMEOUT_MS = 2_000;
/** Scrapes within this long of a reading share it: several Prometheus servers, or a dashboard, cost one query. */
export const BACKLOG_CACHE_MS = 5_000;

/**
 * The gauges read from the database when scraped: the backlog, the endpoints
 * by state, whether the database answered, and the connection pool. One
 * reading serves every gauge of a scrape and every scrape for `cacheMs`
 * (BACKLOG_CACHE_MS);
 * only one is ever in progress. A reading that fails or takes longer than
 * BACKLOG_TIMEOUT_MS sets herald_database_up to 0 and leaves the other
 * gauges at their last values, so a database that is down or frozen never
 * makes /metrics fail or hang.
 */
export function databaseGauges(registry: Registry, db: Db, { now, cacheMs }: { now: () => Date | null; cacheMs: number }): void {
  let last: { at: number; ok: boolean } | undefined;
  let reading: Promise<void> | undefined;
  // A reading given up on may still hold a connection: no other starts until it ends.
  let abandoned: Promise<unknown> | undefined;
  let backlog: Backlog | undefined;

  async function readOnce(): Promise<void> {
    let got: Backlog | undefined;
    if (!abandoned) {
      // Bounded on the server as well, so that a reading given up on here does not run on there.
      const read = (async () =>
        db.transaction(async (tx) => {
          if (db.engine === 'postgres') await tx.query(`SET LOCAL statement_timeout = ${BACKLOG_TIMEOUT_MS}`);
          return readBacklog(tx, now());
        }))().catch(() => undefined);
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), BACKLOG_TIMEOUT_MS)));
      const first = await Promise.race([read, late]).finally(() => clearTimeout(timer));
      if (first === 'late') abandoned = read.finally(() => (abandoned = undefined));
      else got = first;
    }
    if (got) backlog = got;
    last = { at: performance.now(), ok: got !== undefined };
  }

  /** A reading at most BACKLOG_CACHE_MS old, or the one in progress. */
  function fresh(): Promise<void> {
    if (last && performance.now() - last.at < cacheMs) return Promise.resolve();
    reading ??= readOnce().finally(() => (reading = undefined));
    return reading;
  }

  new Gauge({
    name: 'herald_database_up',
    help: `1 when the database answered this process's last metrics reading within ${BACKLOG_TIMEOUT_MS / 1000} s, 0 when it did not.`,
    registers: [registry],
    async collect() {
      await fresh();
      this.set(last?.ok ? 1 : 0);
    },
  });
  new Gauge({
    name: 'herald_deliveries_pending',
    help: 'Deliveries waiting for their first attempt or a retry, or in flight, over all workers (counted up to 100000).',
    registers: [registry],
    async collect() {
      await fresh();
      if (backlog) this.set(backlog.pending);
    },
  });
  new Gauge({
    name: 'herald_deliveries_oldest_pending_seconds',
    help: 'How long the most overdue pending delivery has been due, in seconds; 0 when every pending delivery is waiting for a later retry.',
    registers: [registry],
    async collect() {
      await fresh();
      if (backlog) this.set(backlog.oldestDueSeconds);
    },
  });
  new Gauge({
    name: 'herald_endpoints',
    help: 'Endpoints by state: enabled, throttled (enabled, but slowed down after 429 or 503 answers) or disabled.',
    labelNames: ['state'],
    registers: [registry],
    async collect() {
      await fresh();
      if (!backlog) return;
      for (const [state, count] of Object.entries(backlog.endpoints)) this.set({ state }, count);
    },
  });

  const stats = db.poolStats?.bind(db);
  if (!stats) return;
  const pool = (name: string, help: string, pick: (s: PoolStats) => number) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        this.set(pick(stats()));
      },
    });
  pool('herald_database_pool_connections', 'Database connections open in this process (the embedded database has one).', (s) => s.total);
  pool('herald_database_pool_idle_connections', 'Open database connections not in use.', (s) => s.idle);
  pool('herald_database_pool_waiting_queries', 'Queries waiting for a database connection (embedded: waiting behind the one running).', (s) => s.waiting);
  pool('herald_database_pool_max_connections', 'The most database connections this process opens.', (s) => s.max);
}
