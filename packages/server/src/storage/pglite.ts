import { PGlite, type Transaction } from '@electric-sql/pglite';
import { asDatabaseError, type Db, type Queryable, type QueryResult, type Row } from './db.ts';

/**
 * PGlite hands bytea back as a Uint8Array, node-postgres as a Buffer; Herald
 * code sees Buffers from both.
 */
function normaliseRow(row: Row): Row {
  for (const key in row) {
    const value = row[key];
    if (value instanceof Uint8Array && !Buffer.isBuffer(value)) {
      row[key] = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
    } else if (typeof value === 'bigint') {
      row[key] = Number(value);
    }
  }
  return row;
}

/** Queries started and not yet answered: PGlite runs one at a time, the others wait their turn. */
interface Busy {
  queries: number;
}

function wrap(target: PGlite | Transaction, busy: Busy): Queryable {
  return {
    async query<R>(text: string, params?: readonly unknown[]): Promise<QueryResult<R>> {
      let res;
      busy.queries += 1;
      try {
        res = await target.query<Row>(text, params as unknown[] | undefined);
      } catch (err) {
        // A read-only database (default_transaction_read_only) answers like PostgreSQL's.
        throw asDatabaseError(err);
      } finally {
        busy.queries -= 1;
      }
      return { rows: res.rows.map(normaliseRow) as R[], rowCount: Math.max(res.rows.length, res.affectedRows ?? 0) };
    },
  };
}

export interface PgliteOptions {
  /** A directory for a file-backed database; omitted for an in-memory one. */
  dataDir?: string;
  /** A tarball from `dumpDataDir()`, to start from a prepared copy (tests). */
  loadDataDir?: Blob | File;
}

/** The embedded adapter: PostgreSQL compiled to WebAssembly, in this process. */
export async function openPglite(options: PgliteOptions = {}): Promise<Db & { dump(): Promise<Blob> }> {
  const pg = await PGlite.create({ dataDir: options.dataDir, loadDataDir: options.loadDataDir });
  const busy: Busy = { queries: 0 };
  const base = wrap(pg, busy);
  return {
    engine: 'pglite',
    query: base.query,
    // One connection, in this process: busy while a query runs, the rest wait behind it.
    poolStats: () => ({ total: 1, idle: busy.queries === 0 ? 1 : 0, waiting: Math.max(0, busy.queries - 1), max: 1 }),
    transaction(fn) {
      return pg.transaction((tx) => fn(wrap(tx, busy)));
    },
    async exec(sql) {
      try {
        await pg.exec(sql);
      } catch (err) {
        throw asDatabaseError(err);
      }
    },
    async listen(channel, onNotify) {
      const unsubscribe = await pg.listen(channel, onNotify);
      return async () => unsubscribe();
    },
    async tryLockSession() {
      // One process holds the data directory (data-dir-lock.ts): it is always the only one.
      return { check: async () => true, release: async () => {} };
    },
    async close() {
      await pg.close();
    },
    async dump() {
      return pg.dumpDataDir('none');
    },
  };
}
