import { parse, PGlite, protocol, type Transaction } from '@electric-sql/pglite';
import { asDatabaseError, type Db, type Queryable, type QueryOptions, type QueryResult, type Row } from './db.ts';

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

/**
 * Named statements, parsed once. PGlite's own `query` parses and describes
 * every statement anew, in six calls into the database. The hot statements,
 * those Herald names (and prepares on PostgreSQL), are parsed here once under
 * their name; each run is then one call: bind, describe, execute and sync.
 * On the single-event publish that halves the database's CPU time.
 *
 * PGlite runs one statement at a time: this takes the same locks its `query`
 * takes, the transaction lock too when called outside a transaction, so a
 * named statement never runs inside another caller's open transaction.
 */
class Prepared {
  /** Each prepared statement's text and parameter types, by name. */
  private readonly statements = new Map<string, { text: string; types: number[] }>();

  constructor(private readonly pg: PGlite) {}

  /**
   * Runs a named statement: in `tx`, a transaction of `pg.transaction`, which
   * holds the transaction lock already, or on its own.
   */
  async query(name: string, text: string, params: readonly unknown[], tx: Transaction | undefined) {
    // As PGlite's own query does: a closed database says so ("PGlite is closed"),
    // and so does a transaction that has ended.
    await this.pg._checkReady();
    if (tx?.closed) throw new Error('Transaction is closed');
    const run = () => this.pg._runExclusiveQuery(() => this.run(name, text, params));
    return tx ? run() : this.pg._runExclusiveTransaction(run);
  }

  private async run(name: string, text: string, params: readonly unknown[]) {
    const { serialize } = protocol;
    let statement = this.statements.get(name);
    if (!statement) {
      const described = await this.pg.execProtocolStream(Buffer.concat([serialize.parse({ name, text }), serialize.describe({ type: 'S', name }), serialize.sync()]), {
        syncToFs: false,
      });
      statement = { text, types: parse.parseDescribeStatementResults(described) };
      this.statements.set(name, statement);
    }
    // A name carries one text (QueryOptions): another text under it would run the first one's statement.
    if (statement.text !== text) throw new Error(`the statement name ${name} was prepared with another text`);
    const { types } = statement;
    const values = params.map((value, i) => (value == null ? null : (this.pg.serializers[types[i]!]?.(value) ?? String(value))));
    const messages = await this.pg.execProtocolStream(
      Buffer.concat([serialize.bind({ statement: name, values }), serialize.describe({ type: 'P' }), serialize.execute({}), serialize.sync()]),
      { syncToFs: false },
    );
    // As PGlite's own query does after a statement outside a transaction.
    if (!this.pg.isInTransaction()) await this.pg.syncToFs();
    return parse.parseResults(messages, this.pg.parsers)[0]!;
  }
}

function wrap(target: PGlite | Transaction, busy: Busy, prepared: Prepared): Queryable {
  const tx = target instanceof PGlite ? undefined : target;
  return {
    async query<R>(text: string, params?: readonly unknown[], options?: QueryOptions): Promise<QueryResult<R>> {
      let res;
      busy.queries += 1;
      try {
        res = options?.name
          ? await prepared.query(options.name, text, params ?? [], tx)
          : await target.query<Row>(text, params as unknown[] | undefined);
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
  const prepared = new Prepared(pg);
  const base = wrap(pg, busy, prepared);
  return {
    engine: 'pglite',
    query: base.query,
    // One connection, in this process: busy while a query runs, the rest wait behind it.
    poolStats: () => ({ total: 1, idle: busy.queries === 0 ? 1 : 0, waiting: Math.max(0, busy.queries - 1), max: 1 }),
    transaction(fn) {
      return pg.transaction((tx) => fn(wrap(tx, busy, prepared)));
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
