import pg from 'pg';
import type { Db, Queryable, QueryOptions, QueryResult } from './db.ts';

const INT8_OID = 20;

/** int8 → number. Herald's int8 columns are counters and tokens, far below 2^53. */
const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === INT8_OID) return (value: string) => Number(value);
    return pg.types.getTypeParser(oid, format);
  },
} as pg.CustomTypesConfig;

export interface PostgresOptions {
  connectionString: string;
  /** Pool size; the dispatcher and API share one pool. */
  max?: number;
  onError?: (err: Error) => void;
}

function wrap(client: pg.Pool | pg.PoolClient): Queryable {
  return {
    async query<R>(text: string, params?: readonly unknown[], options?: QueryOptions): Promise<QueryResult<R>> {
      const values = params as unknown[] | undefined;
      // A named statement is parsed and planned once per connection: the hot
      // statements are long CTEs whose planning cost more than their execution.
      const res = options?.name ? await client.query({ name: options.name, text, values }) : await client.query(text, values);
      return { rows: res.rows as R[], rowCount: res.rowCount ?? 0 };
    },
  };
}

/** A lock's connection that does not connect or answer within this long is taken as lost. */
const LOCK_QUERY_TIMEOUT_MS = 10_000;

/** The PostgreSQL adapter (`DATABASE_URL`), on node-postgres' pool. */
export async function openPostgres(options: PostgresOptions): Promise<Db> {
  const pool = new pg.Pool({ connectionString: options.connectionString, max: options.max ?? 10, types });
  pool.on('error', (err) => options.onError?.(err));
  // Fail fast with a clear message when the server cannot be reached.
  await pool.query('SELECT 1');
  const base = wrap(pool);
  const listeners = new Set<pg.PoolClient>();

  return {
    engine: 'postgres',
    query: base.query,
    async transaction(fn) {
      const client = await pool.connect();
      // A connection whose ROLLBACK failed may still be in the transaction:
      // it is closed, not handed to the next caller.
      let broken: Error | undefined;
      try {
        await client.query('BEGIN');
        const result = await fn(wrap(client));
        await client.query('COMMIT');
        return result;
      } catch (err) {
        await client.query('ROLLBACK').catch((rollbackErr: Error) => {
          broken = rollbackErr;
        });
        throw err;
      } finally {
        client.release(broken);
      }
    },
    async exec(sql) {
      await pool.query(sql);
    },
    async listen(channel, onNotify) {
      const client = await pool.connect();
      listeners.add(client);
      const handler = (msg: pg.Notification) => {
        if (msg.channel === channel) onNotify(msg.payload ?? '');
      };
      client.on('notification', handler);
      await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
      return async () => {
        if (!listeners.delete(client)) return;
        client.off('notification', handler);
        await client.query(`UNLISTEN ${pg.escapeIdentifier(channel)}`).catch(() => {});
        client.release();
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
      for (const client of listeners) client.release(true);
      listeners.clear();
      await pool.end();
    },
  };
}
