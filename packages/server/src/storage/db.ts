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

/** A session-level advisory lock, held on a connection of its own until released or lost. */
export interface SessionLock {
  /** True while the lock is still held: checks its connection with a round trip (false once that connection failed). */
  check(): Promise<boolean>;
  /** Gives the lock up and closes its connection. */
  release(): Promise<void>;
}

export interface Db extends Queryable {
  readonly engine: Engine;
  /** Runs `fn` in one transaction; commits when it resolves, rolls back when it throws. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  /** Runs several statements separated by semicolons, without parameters (migrations). */
  exec(sql: string): Promise<void>;
  /** LISTEN on a channel; resolves to a function that stops listening. */
  listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>>;
  /**
   * Takes the session-level advisory lock `key` if no one holds it, on a
   * connection of its own outside the pool; undefined when another session
   * holds it. The embedded engine has one process: it always gets it.
   */
  tryLockSession(key: number): Promise<SessionLock | undefined>;
  close(): Promise<void>;
}
