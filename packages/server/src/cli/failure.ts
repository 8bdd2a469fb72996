import { userInfo } from 'node:os';
import { DevCaMissingError } from '../dev/dev-ca.ts';
import { ConfigError, HeraldError } from '../errors.ts';
import { DataDirLockedError } from '../storage/data-dir-lock.ts';
import { DatabaseUnavailableError, unavailableReason } from '../storage/db.ts';
import { SchemaTooNewError } from '../storage/migrate.ts';
import { ApiProblemError, ApiUnreachableError } from './api-client.ts';
import { problemLines } from './api-output.ts';

/** The exit codes of `herald`, one per kind of failure (docs/cli.md, "Exit codes"). */
export const EXIT = {
  /** A command that ran and failed: the API or an operator command refused it, a test send failed, or an unexpected error. */
  failed: 1,
  /** An unknown command or option, or a setting that is missing or wrong (the encryption key included). */
  usage: 2,
  /** The PostgreSQL database: it does not exist, refuses the role or password, cannot be reached, or is newer than this Herald. */
  database: 3,
  /** This machine: the port is in use, or the data directory is held by another Herald or cannot be written. */
  local: 4,
  /** Herald's API cannot be reached (the endpoints, attempts, events and listen commands). */
  api: 5,
} as const;

/** Every message the CLI prints about a failure starts with this. */
export const PREFIX = 'herald: ';

export interface Failure {
  /** Printed on standard error; the first line starts with PREFIX. */
  lines: string[];
  exitCode: number;
}

export interface FailureContext {
  databaseUrl?: string;
  dataDir?: string;
  databaseTimeoutMs?: number;
}

/** Node's errno codes and PostgreSQL's SQLSTATEs sit on the error or on one of its causes. */
function codeOf(err: unknown): string | undefined {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    // Node's happy-eyeballs connect gives an AggregateError of one error per address.
    if (e instanceof AggregateError && e.errors[0] instanceof Error) return codeOf(e.errors[0]);
  }
  return undefined;
}

function errnoOf(err: unknown): NodeJS.ErrnoException | undefined {
  return err instanceof Error && typeof (err as NodeJS.ErrnoException).code === 'string' ? (err as NodeJS.ErrnoException) : undefined;
}

/** A word for the shell: as it is when it is plain, else in single quotes. */
const shellWord = (s: string) => (/^[A-Za-z0-9_./:@-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

/** Where DATABASE_URL points, as libpq reads it (the same defaults node-postgres applies), without the password. */
export function databaseTarget(url: string): { host: string; port: string; user: string; database: string; password: string } {
  const u = new URL(url);
  const host = u.searchParams.get('host') ?? (u.hostname || 'localhost');
  const user = decodeURIComponent(u.username) || process.env.PGUSER || userInfo().username;
  return {
    host,
    port: u.port || '5432',
    user,
    database: decodeURIComponent(u.pathname.slice(1)) || user,
    password: decodeURIComponent(u.password),
  };
}

/** `-h HOST [-p PORT]` for psql, createdb and createuser. */
const hostArgs = (t: { host: string; port: string }) => `-h ${shellWord(t.host)}${t.port === '5432' ? '' : ` -p ${t.port}`}`;

/** Start-up and connection failures of PostgreSQL, by SQLSTATE and by Node's socket error codes. */
function databaseFailure(err: unknown, url: string, timeoutMs: number | undefined): string | undefined {
  let t: ReturnType<typeof databaseTarget>;
  try {
    t = databaseTarget(url);
  } catch {
    return undefined;
  }
  const where = `${t.host}:${t.port}`;
  const code = codeOf(err);
  switch (code) {
    case '3D000': // invalid_catalog_name
      return (
        `database "${t.database}" does not exist on ${where}; create it with: ` +
        `createdb ${hostArgs(t)} -U postgres${t.user === 'postgres' ? '' : ` -O ${shellWord(t.user)}`} ${shellWord(t.database)} ` +
        '(or correct the database name in DATABASE_URL)'
      );
    case '28000': // invalid_authorization_specification: no such role, or no pg_hba.conf entry for it
      return (
        `PostgreSQL on ${where} refused role "${t.user}" (${(err as Error).message}); create the role with: ` +
        `createuser ${hostArgs(t)} -U postgres --pwprompt ${shellWord(t.user)}, or correct the user in DATABASE_URL (and check pg_hba.conf)`
      );
    case '28P01': // invalid_password
      return (
        `PostgreSQL on ${where} refused the password of role "${t.user}"; correct the password in DATABASE_URL, ` +
        `or set it with: psql ${hostArgs(t)} -U postgres -c '\\password ${t.user}'`
      );
    case 'ECONNREFUSED':
      return `cannot connect to PostgreSQL on ${where}: connection refused; start PostgreSQL there, or correct the host and port in DATABASE_URL`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `cannot connect to PostgreSQL: the host name "${t.host}" does not resolve; correct the host in DATABASE_URL`;
    case 'ETIMEDOUT':
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return `cannot connect to PostgreSQL on ${where}: no answer (${code}); check that the host is reachable from here (a firewall?) and the host and port in DATABASE_URL`;
  }
  switch (unavailableReason(err) ?? (err instanceof DatabaseUnavailableError ? err.reason : undefined)) {
    case 'timeout':
      return (
        `PostgreSQL on ${where} did not answer within ${timeoutMs ?? 'the'} ms; check that it is up and reachable from here, ` +
        'or raise HERALD_DATABASE_TIMEOUT_MS'
      );
    case 'unreachable':
      return `cannot connect to PostgreSQL on ${where} (${(err as Error).message}); check that it is running and the host and port in DATABASE_URL`;
    case 'read_only':
      return `PostgreSQL on ${where} refuses writes (a standby, or default_transaction_read_only); point DATABASE_URL at the primary`;
  }
  return undefined;
}

/** The port (EADDRINUSE and friends) or the data directory (a file system error on it). */
function localFailure(err: unknown, dataDir: string | undefined): string | undefined {
  const e = errnoOf(err);
  if (!e) return undefined;
  if (e.syscall === 'listen' || e.syscall === 'bind') {
    const { address, port } = e as { address?: string; port?: number };
    const at = `${address ?? 'this host'}:${port ?? '?'}`;
    if (e.code === 'EADDRINUSE') return `port ${port} on ${address ?? 'this host'} is already in use; stop what holds it, or pass --port`;
    if (e.code === 'EACCES') return `cannot listen on ${at}: permission denied (ports below 1024 need privileges); pass --port with a higher port`;
    if (e.code === 'EADDRNOTAVAIL') return `cannot listen on ${at}: that address is not on this machine; pass --host (HERALD_HOST) with one of its addresses`;
  }
  if (dataDir && typeof e.path === 'string') {
    const why: Record<string, string> = {
      EACCES: 'permission denied',
      EPERM: 'operation not permitted',
      EROFS: 'the file system is read-only',
      ENOTDIR: 'a part of the path is a file, not a directory',
      ENOSPC: 'the disk is full',
    };
    if (why[e.code!]) {
      return `the data directory ${dataDir} cannot be written: ${why[e.code!]} (${e.syscall} ${e.path}); give Herald a directory it can write with --data-dir (HERALD_DATA_DIR)`;
    }
  }
  return undefined;
}

/**
 * What to tell the person who ran `herald` about an error, and the exit code.
 * Expected failures get one line naming the problem and the fix; only an
 * unexpected error shows its stack.
 */
export function describeFailure(err: unknown, ctx: FailureContext): Failure {
  if (err instanceof ApiProblemError) {
    const lines = problemLines(err.problem).map((line, i) => (i === 0 ? `${PREFIX}${line}` : line));
    return { lines, exitCode: EXIT.failed };
  }
  if (err instanceof ApiUnreachableError) return { lines: [`${PREFIX}${err.message}`], exitCode: EXIT.api };
  if (err instanceof ConfigError || err instanceof DevCaMissingError) return { lines: [`${PREFIX}${err.message}`], exitCode: EXIT.usage };
  if (err instanceof DataDirLockedError) return { lines: [`${PREFIX}${err.message}`], exitCode: EXIT.local };
  if (err instanceof SchemaTooNewError) return { lines: [`${PREFIX}${err.message}`], exitCode: EXIT.database };
  if (err instanceof HeraldError) return { lines: [`${PREFIX}${err.message}`], exitCode: EXIT.failed };
  const local = localFailure(err, ctx.databaseUrl ? undefined : ctx.dataDir);
  if (local) return { lines: [`${PREFIX}${local}`], exitCode: EXIT.local };
  if (ctx.databaseUrl) {
    const db = databaseFailure(err, ctx.databaseUrl, ctx.databaseTimeoutMs);
    if (db) return { lines: [`${PREFIX}${redact(db, ctx.databaseUrl)}`], exitCode: EXIT.database };
  }
  // The stack, not the whole object: a database error from PGlite carries
  // the statement's parameters, which can hold a hash or a sealed secret.
  const text = err instanceof Error ? (err.stack ?? err.message) : String(err);
  return { lines: [`${PREFIX}unexpected error: ${ctx.databaseUrl ? redact(text, ctx.databaseUrl) : text}`], exitCode: EXIT.failed };
}

/** Whatever a driver put in a message, the password of DATABASE_URL is not printed. */
function redact(text: string, databaseUrl: string): string {
  let password = '';
  try {
    password = databaseTarget(databaseUrl).password;
  } catch {
    /* not a URL: it has no password to hide */
  }
  return password ? text.split(password).join('[password]') : text;
}
