import pg from 'pg';
import { asDatabaseError, DatabaseUnavailableError, type Db, type ListenHooks, type Queryable, type QueryOptions, type QueryResult } from './db.ts';

const INT8_OID = 20;

/** int8 → number. Herald's int8 columns are counters and tokens, far below 2^53. */
const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === INT8_OID) return (value: string) => Number(value);
    return pg.types.getTypeParser(oid, format);
  },
} as pg.CustomTypesConfig;

/** A lost LISTEN connection is opened again after 250 ms, doubling up to 10 s, each wait shortened by up to half at random. */
const LISTEN_RETRY_FIRST_MS = 250;
const LISTEN_RETRY_MAX_MS = 10_000;
/**
 * How often the LISTEN connection runs `SELECT 1`. A connection that only
 * listens sends nothing, so without it a server that froze or a proxy that
 * dropped the connection without a word would go unnoticed for as long as
 * TCP keepalive takes (hours by default); it also keeps idle-connection
 * timeouts (idle_session_timeout, a proxy's) from closing it.
 */
const LISTEN_HEARTBEAT_MS = 15_000;

export interface PostgresOptions {
  connectionString: string;
  /** Pool size; the dispatcher and API share one pool. */
  max?: number;
  /**
   * The longest any query may take, measured by Herald (so it also ends when
   * the server is frozen) and by the server (`statement_timeout`). A
   * connection whose query timed out is closed, never reused. 0 or absent:
   * no limit (migrations, which can take minutes on a large table).
   */
  timeoutMs?: number;
  /** The longest opening a connection (or waiting for a free one in the pool) may take; `timeoutMs` unless given, 0: no limit. */
  connectTimeoutMs?: number;
  /** Told about connection failures that no query reports: an idle connection lost, the LISTEN connection lost. */
  onError?: (err: Error, what: string) => void;
  /** Random source for the reconnection jitter; tests pass a fixed one. */
  random?: () => number;
}

function wrap(client: pg.Pool | pg.PoolClient): Queryable {
  return {
    async query<R>(text: string, params?: readonly unknown[], options?: QueryOptions): Promise<QueryResult<R>> {
      const values = params as unknown[] | undefined;
      try {
        // A named statement is parsed and planned once per connection: the hot
        // statements are long CTEs whose planning cost more than their execution.
        const res = options?.name ? await client.query({ name: options.name, text, values }) : await client.query(text, values);
        return { rows: res.rows as R[], rowCount: res.rowCount ?? 0 };
      } catch (err) {
        throw asDatabaseError(err);
      }
    },
  };
}

/** Resolves when `promise` settles or after `ms`, whichever comes first (never rejects). */
function within(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise.then(
      () => {},
      () => {},
    ),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/** A lock's connection that does not connect or answer within this long is taken as lost. */
const LOCK_QUERY_TIMEOUT_MS = 10_000;

/** The PostgreSQL adapter (`DATABASE_URL`), on node-postgres' pool. */
export async function openPostgres(options: PostgresOptions): Promise<Db> {
  const timeoutMs = options.timeoutMs || undefined;
  const connectTimeoutMs = (options.connectTimeoutMs ?? options.timeoutMs) || undefined;
  const report = (err: Error, what: string) => options.onError?.(err, what);
  const clientConfig: pg.ClientConfig = {
    connectionString: options.connectionString,
    types,
    // TCP keepalive: a peer that vanished is noticed eventually even on a connection that waits.
    keepAlive: true,
    connectionTimeoutMillis: connectTimeoutMs,
    query_timeout: timeoutMs,
    statement_timeout: timeoutMs,
  };
  const pool = new pg.Pool({ ...clientConfig, max: options.max ?? 10 });
  // An idle connection that fails (the server restarted, terminated it) is
  // dropped from the pool; without a handler the error would end the process.
  pool.on('error', (err) => report(err, 'an idle database connection failed; it was closed'));
  // Fail fast with a clear message when the server cannot be reached.
  try {
    await pool.query('SELECT 1');
  } catch (err) {
    await within(pool.end(), 1_000);
    throw asDatabaseError(err);
  }
  const base = wrap(pool);
  const listeners = new Set<{ stop(): Promise<void> }>();

  return {
    engine: 'postgres',
    query: base.query,
    poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount, max: options.max ?? 10 }),
    async transaction(fn) {
      let client: pg.PoolClient;
      try {
        client = await pool.connect();
      } catch (err) {
        throw asDatabaseError(err);
      }
      // A connection that failed, timed out or whose ROLLBACK failed may
      // still be in the transaction or in a query: it is closed (the server
      // rolls back), not handed to the next caller.
      let broken: Error | undefined;
      // While it is checked out, the pool no longer listens for its errors
      // (a connection terminated between two statements): they are ours.
      const onError = (err: Error) => {
        broken ??= err;
      };
      client.on('error', onError);
      const tx = wrap(client);
      try {
        await tx.query('BEGIN');
        const result = await fn(tx);
        await tx.query('COMMIT');
        return result;
      } catch (err) {
        if (err instanceof DatabaseUnavailableError) broken ??= err;
        else {
          await client.query('ROLLBACK').catch((rollbackErr: Error) => {
            broken = rollbackErr;
          });
        }
        throw err;
      } finally {
        client.off('error', onError);
        client.release(broken);
      }
    },
    async exec(sql) {
      await base.query(sql);
    },
    async listen(channel, onNotify, hooks = {}) {
      const listener = keepListening({ config: clientConfig, channel, onNotify, hooks, report, random: options.random ?? Math.random, timeoutMs: connectTimeoutMs ?? 10_000 });
      listeners.add(listener);
      await listener.started;
      return async () => {
        if (!listeners.delete(listener)) return;
        await listener.stop();
      };
    },
    async tryLockSession(key) {
      // A client of its own, not one of the pool's: a session lock lives as
      // long as its connection, and holding a pool connection for good would
      // take it from the API and the dispatcher.
      const client = new pg.Client({
        connectionString: options.connectionString,
        types,
        keepAlive: true,
        connectionTimeoutMillis: LOCK_QUERY_TIMEOUT_MS,
        query_timeout: LOCK_QUERY_TIMEOUT_MS,
      });
      let lost = false;
      client.on('error', () => {
        lost = true;
      });
      client.on('end', () => {
        lost = true;
      });
      try {
        await client.connect();
        // The server holds a session lock until it notices the connection is
        // gone: with the kernel's default keepalive that is some two hours
        // after the leader's machine dies without closing it (power cut,
        // network split), and nobody maintains the database meanwhile. These
        // make the server give up on a silent client within about a minute.
        // Set after connecting, not as start-up options, which PgBouncer refuses.
        await client.query('SET tcp_keepalives_idle = 30; SET tcp_keepalives_interval = 10; SET tcp_keepalives_count = 3');
        const { rows } = await client.query<{ got: boolean }>('SELECT pg_try_advisory_lock($1) AS got', [key]);
        if (rows[0]?.got) {
          const lock = {
            async check() {
              if (lost) return false;
              try {
                await client.query('SELECT 1');
                return true;
              } catch {
                lost = true;
                return false;
              }
            },
            async release() {
              if (!lost) await client.query('SELECT pg_advisory_unlock($1)', [key]).catch(() => {});
              lost = true;
              await client.end().catch(() => {});
            },
          };
          return lock;
        }
      } catch (err) {
        await client.end().catch(() => {});
        throw err;
      }
      await client.end().catch(() => {});
      return undefined;
    },
    async close() {
      await Promise.all([...listeners].map((l) => l.stop()));
      listeners.clear();
      // The pool ends once every checked-out connection is back; each query
      // on one is bounded, so this is too, but only when a bound is set.
      if (timeoutMs) await within(pool.end(), timeoutMs + 1_000);
      else await pool.end();
    },
  };
}

interface ListenParams {
  config: pg.ClientConfig;
  channel: string;
  onNotify: (payload: string) => void;
  hooks: ListenHooks;
  report: (err: Error, what: string) => void;
  random: () => number;
  /** Bound on opening the connection, on its heartbeat, and on closing it at stop. */
  timeoutMs: number;
}

/**
 * One LISTEN on a connection of its own (outside the pool, so it never
 * takes a query's place). When the connection is lost, it is opened again
 * with capped exponential back-off and jitter, for as long as it takes; the
 * caller hears of both through its hooks.
 */
function keepListening(p: ListenParams): { started: Promise<void>; stop(): Promise<void> } {
  let client: pg.Client | undefined;
  let stopped = false;
  let down = false;
  let failures = 0;
  let retryTimer: NodeJS.Timeout | undefined;
  let heartbeat: NodeJS.Timeout | undefined;

  // Without a bound of its own, a frozen server would hold the heartbeat (and a reconnection) for good.
  const config: pg.ClientConfig = { ...p.config, connectionTimeoutMillis: p.config.connectionTimeoutMillis || p.timeoutMs, query_timeout: p.config.query_timeout || p.timeoutMs };

  async function connect(): Promise<void> {
    const c = new pg.Client(config);
    client = c;
    c.on('error', (err) => lost(c, err));
    c.on('end', () => lost(c, new Error('the LISTEN connection was closed')));
    c.on('notification', (msg) => {
      if (msg.channel === p.channel) p.onNotify(msg.payload ?? '');
    });
    try {
      await c.connect();
      await c.query(`LISTEN ${pg.escapeIdentifier(p.channel)}`);
    } catch (err) {
      lost(c, err as Error);
      return;
    }
    if (client !== c || stopped) return;
    failures = 0;
    heartbeat = setInterval(() => void c.query('SELECT 1').catch((err: Error) => lost(c, err)), LISTEN_HEARTBEAT_MS);
    heartbeat.unref();
    if (down) {
      down = false;
      if (p.hooks.onUp) p.hooks.onUp();
      else p.onNotify('');
    }
  }

  function lost(c: pg.Client, err: Error): void {
    if (client !== c || stopped) return;
    client = undefined;
    clearInterval(heartbeat);
    // On a dead or frozen connection this closes the socket at once.
    c.end().catch(() => {});
    if (!down) {
      down = true;
      p.report(asDatabaseError(err) as Error, `the database connection listening on ${p.channel} was lost; reconnecting (polling meanwhile)`);
      p.hooks.onDown?.(err);
    }
    failures += 1;
    const cap = Math.min(LISTEN_RETRY_MAX_MS, LISTEN_RETRY_FIRST_MS * 2 ** (failures - 1));
    retryTimer = setTimeout(() => void connect(), cap / 2 + (p.random() * cap) / 2);
    retryTimer.unref();
  }

  return {
    started: connect(),
    async stop() {
      stopped = true;
      clearTimeout(retryTimer);
      clearInterval(heartbeat);
      const c = client;
      client = undefined;
      // Closing the connection ends the LISTEN; no UNLISTEN needed.
      if (c) await within(c.end(), p.timeoutMs);
    },
  };
}
