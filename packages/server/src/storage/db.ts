/**
 * The storage port. Everything above `storage/` talks to the database through
 * these few methods, so the embedded engine (PGlite) and PostgreSQL (`pg`)
 * are interchangeable. Adapters normalise engine differences before rows leave
 * them: int8 is a JS number, bytea is a Buffer, timestamptz is a Date.
 */
export type Row = Record<string, unknown>;

export interface QueryResult<R> {
  rows: R[];
  rowCount: number;
}

export interface QueryOptions {
  /**
   * Prepare the statement once per connection under this name and reuse its
   * plan (PostgreSQL; the embedded engine ignores it). Only for the hot
   * statements, and a name must always carry the same text.
   */
  name?: string;
}

export interface Queryable {
  query<R = Row>(text: string, params?: readonly unknown[], options?: QueryOptions): Promise<QueryResult<R>>;
}

export type Engine = 'pglite' | 'postgres';

export interface Db extends Queryable {
  readonly engine: Engine;
  /** Runs `fn` in one transaction; commits when it resolves, rolls back when it throws. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  /** Runs several statements separated by semicolons, without parameters (migrations). */
  exec(sql: string): Promise<void>;
  /** LISTEN on a channel; resolves to a function that stops listening. */
  listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}
