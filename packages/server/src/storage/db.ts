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
   * Prepare the statement once per connection under this name and reuse it
   * (on both engines). Only for the hot statements, and a name must always
   * carry the same text.
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

/** The connection pool as the metrics show it. */
export interface PoolStats {
  /** Connections open (PostgreSQL); the embedded engine's one connection. */
  total: number;
  /** Open and unused. */
  idle: number;
  /** Queries waiting for a connection (PostgreSQL), or behind the one running (embedded). */
  waiting: number;
  /** The most connections the pool opens. */
  max: number;
}

export interface Db extends Queryable {
  readonly engine: Engine;
  /** How busy the connections are, for the metrics; absent on test doubles. */
  poolStats?(): PoolStats;
  /** Runs `fn` in one transaction; commits when it resolves, rolls back when it throws. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  /** Runs several statements separated by semicolons, without parameters (migrations). */
  exec(sql: string): Promise<void>;
  /**
   * LISTEN on a channel; resolves to a function that stops listening. A lost
   * connection is opened again by itself (PostgreSQL); notifications sent
   * while it was down are lost, so the caller must poll as well. Without an
   * `onUp` hook, `onNotify('')` is called after each reconnection, as if a
   * notification had arrived.
   */
  listen(channel: string, onNotify: (payload: string) => void, hooks?: ListenHooks): Promise<() => Promise<void>>;
  /**
   * Takes the session-level advisory lock `key` if no one holds it, on a
   * connection of its own outside the pool; undefined when another session
   * holds it. The embedded engine has one process: it always gets it.
   */
  tryLockSession(key: number): Promise<SessionLock | undefined>;
  close(): Promise<void>;
}

/** What a listener hears about its connection, beyond the notifications. */
export interface ListenHooks {
  /** The connection was lost (or could not be opened): notifications stop until `onUp`. */
  onDown?(err: Error): void;
  /** Listening again after `onDown`; anything may have been missed meanwhile. */
  onUp?(): void;
}

/** Why the database could not serve a query: nothing about the query itself. */
export type UnavailableReason = 'unreachable' | 'timeout' | 'read_only';

/**
 * The database cannot be reached, did not answer in time, or refuses writes
 * (a standby, `default_transaction_read_only`). Nothing is wrong with the
 * request: the same one may succeed once the database is back, so the API
 * answers 503 `database_unavailable` and workers try again. The adapters
 * throw it in place of the driver's error, which stays as `cause` (it may
 * name the server; it never reaches an API answer).
 */
export class DatabaseUnavailableError extends Error {
  constructor(
    readonly reason: UnavailableReason,
    options: { cause: unknown },
  ) {
    const cause = options.cause instanceof Error ? options.cause.message : String(options.cause);
    super(`${UNAVAILABLE_MESSAGES[reason]}: ${cause}`, options);
    this.name = 'DatabaseUnavailableError';
  }
}

const UNAVAILABLE_MESSAGES: Record<UnavailableReason, string> = {
  unreachable: 'the database cannot be reached',
  timeout: 'the database did not answer in time',
  read_only: 'the database refuses writes (read-only)',
};

/** The error, or one of its causes, says the database is unavailable. */
export function unavailableReason(err: unknown): UnavailableReason | undefined {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof DatabaseUnavailableError) return e.reason;
  }
  return undefined;
}

/** Network errors of the socket to the database. */
const SOCKET_ERRORS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENETDOWN', 'EHOSTDOWN', 'ENOTFOUND', 'EAI_AGAIN']);

/**
 * Classifies a driver's error. SQLSTATEs: class 08 (connection exception),
 * 57P01–57P03 and 57P05 (the server shut down, crashed, is starting, or
 * ended an idle session), 53300 (too many connections), 57014 (cancelled:
 * statement_timeout), 25006 (read-only transaction). node-postgres's own
 * errors (timeouts, a connection terminated) carry no SQLSTATE: known by
 * their message.
 */
export function classifyDatabaseError(err: unknown): UnavailableReason | undefined {
  if (!(err instanceof Error)) return undefined;
  if (err instanceof DatabaseUnavailableError) return err.reason;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (code === '25006') return 'read_only';
    if (code === '57014') return 'timeout';
    if (code.startsWith('08') || /^57P0[1235]$/.test(code) || code === '53300' || SOCKET_ERRORS.has(code)) return 'unreachable';
    if (/^[0-9A-Z]{5}$/.test(code)) return undefined;
  }
  if (/timeout|timed out/i.test(err.message)) return 'timeout';
  if (/Connection terminated|not queryable|Connection closed|connect E[A-Z]+|socket hang up/i.test(err.message)) return 'unreachable';
  return undefined;
}

/** The error as thrown to Herald's code: a DatabaseUnavailableError when it is one, else unchanged. */
export function asDatabaseError(err: unknown): unknown {
  const reason = classifyDatabaseError(err);
  return reason && !(err instanceof DatabaseUnavailableError) ? new DatabaseUnavailableError(reason, { cause: err }) : err;
}
