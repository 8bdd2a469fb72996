import { BlockList, isIPv4, isIPv6 } from 'node:net';
import { resolve } from 'node:path';
import { parseCidr } from './core/address-policy.ts';
import { ConfigError } from './errors.ts';

/**
 * The only place that reads settings. Environment variables and command-line
 * flags are parsed and validated once; a bad value stops Herald at start with
 * the name of the setting. Flags win over the environment.
 */
export const ROLES = ['all', 'api', 'worker'] as const;
export type Role = (typeof ROLES)[number];

export interface RetrySchedule {
  /** Nominal delay before the first retry. */
  baseMs: number;
  /** Each further retry waits `factor` times longer. */
  factor: number;
  /** No nominal delay exceeds this. */
  capMs: number;
  /** Fraction of the nominal delay added or removed at random (0.2 = ±20 %). */
  jitter: number;
  /** Retries after the first attempt (up to 6: part of the published contract). */
  maxRetries: number;
}

export interface DispatcherConfig {
  /** Requests in flight at once in this process, over all endpoints. */
  concurrency: number;
  /** Requests in flight at once to any one endpoint, across all workers. */
  endpointConcurrency: number;
  /**
   * Requests in flight at once to any one origin (scheme, host and port),
   * across all workers; also each worker's connections per origin, so no
   * request waits inside the HTTP client for a connection.
   */
  originConcurrency: number;
  /** How long a claimed delivery stays invisible to other workers. */
  leaseMs: number;
  /** Fallback poll interval when no notification arrives. */
  pollMs: number;
  /** Receiver deadline (10 s: part of the published contract). */
  requestTimeoutMs: number;
  /** Consecutive failed deliveries before an endpoint is disabled (20: part of the published contract). */
  disableAfter: number;
  retry: RetrySchedule;
}

export interface Config {
  role: Role;
  host: string;
  port: number;
  /** The embedded database's directory (and its encryption key file). */
  dataDir: string;
  /** Set: PostgreSQL. Unset: embedded PGlite in `dataDir`. */
  databaseUrl: string | undefined;
  /** base64 of 32 bytes; required with PostgreSQL, generated into dataDir otherwise. */
  encryptionKey: Buffer | undefined;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** `json`: one JSON object a line, for a log collector. `pretty`: coloured, one readable line each, for a person at a terminal. */
  logFormat: 'json' | 'pretty';
  metrics: MetricsConfig;
  /** Largest request body the API accepts, in bytes. */
  maxBodyBytes: number;
  /** How long a client has to send a whole request, headers and body; a stalled one gets 408 and is closed. */
  bodyTimeoutMs: number;
  /** The longest a PostgreSQL query (or opening a connection) may take; past it the query fails and its connection is closed. */
  databaseTimeoutMs: number;
  /** The longest a stop (SIGTERM, SIGINT) takes; past it Herald exits with what is left unwritten. */
  shutdownTimeoutMs: number;
  rateLimits: RateLimits;
  limits: AccountLimits;
  panel: PanelAuthConfig;
  dispatcher: DispatcherConfig;
  retention: RetentionConfig;
  /**
   * Non-public networks webhooks may still be sent to (CIDR). Empty: public
   * addresses only, so a customer's endpoint cannot reach into the operator's network.
   */
  allowedNetworks: string[];
  /**
   * Reverse proxies whose forwarding headers (X-Forwarded-For, -Proto, -Host)
   * are believed, as addresses or CIDR ranges. Empty: none, so a request's
   * address is always the one its connection came from.
   */
  trustedProxies: string[];
  /**
   * Development mode (`--dev`, HERALD_DEV=1), for a developer's own machine:
   * loopback is added to `allowedNetworks`, and the data directory's
   * development CA is trusted for loopback receivers (docs/decisions/0015).
   */
  dev: boolean;
  /**
   * NODE_EXTRA_CA_CERTS, Node's own setting: a file of CAs trusted besides
   * the system's. Development mode gives TLS its own CA list, which would
   * drop them, so it adds them back from this file.
   */
  extraCaFile: string | undefined;
}

/** Prometheus metrics (docs/running.md, "Metrics and logs"). */
export interface MetricsConfig {
  /**
   * A port of its own for GET /metrics, on HERALD_HOST, for the operator's
   * network only; every role serves it (a worker has no API port). Unset: none.
   */
  port: number | undefined;
  /**
   * Scrapers send it as `Authorization: Bearer <token>`. Set, /metrics is also
   * served on the API port, and the metrics port asks for it too; unset, the
   * API port has no /metrics (it would be open to anyone who reaches the API).
   */
  token: string | undefined;
  /** Adds an `endpoint` label (the endpoint id) to the attempt metrics: one series per endpoint, for small installations. */
  endpointLabels: boolean;
}

/** What development mode adds to the allowed networks: this machine. */
export const LOOPBACK_NETWORKS = ['127.0.0.0/8', '::1/128'] as const;

/** Panel sign-in: the session cookie and how long a session lasts. */
export interface PanelAuthConfig {
  /**
   * `auto`: the cookie is `Secure` when the request came over TLS (directly or,
   * behind a proxy, with `X-Forwarded-Proto: https`); `always` / `never` force it.
   */
  cookieSecure: 'auto' | 'always' | 'never';
  /** A session unused for this long ends. */
  sessionIdleMs: number;
  /** A session ends this long after sign-in, used or not. */
  sessionMaxMs: number;
}

export const DEFAULT_PANEL_AUTH: Readonly<PanelAuthConfig> = Object.freeze({
  cookieSecure: 'auto',
  sessionIdleMs: 8 * 3_600_000,
  sessionMaxMs: 7 * 86_400_000,
});

/** How long finished deliveries are kept (pending ones are kept until they finish). */
export interface RetentionConfig {
  /** Succeeded deliveries, counted from their last change. */
  succeededDays: number;
  /** Failed and skipped deliveries, counted the same way; never less than `succeededDays`. */
  undeliveredDays: number;
}

export const DEFAULT_RETENTION: Readonly<RetentionConfig> = Object.freeze({ succeededDays: 30, undeliveredDays: 90 });

/** Requests per minute per API key (or panel session), or per address for failures, in each API process; 0 turns a limit off. */
export interface RateLimits {
  /** Every /v1 route but ingest. */
  managementPerMinute: number;
  /** POST /v1/events and /v1/events/batch. */
  ingestPerMinute: number;
  /** Failed authentications per client address (UnauthenticatedLimiter). */
  unauthenticatedPerMinute: number;
}

/**
 * What one account may make Herald hold and send, so that no customer can
 * exhaust a Herald shared with others. An event goes to at most every
 * endpoint of its account, so the endpoint limit bounds each event's fan-out.
 */
export interface AccountLimits {
  /** Endpoints one account may have. */
  endpointsPerAccount: number;
  /** Deliveries one batch publish may create (its events times the endpoints subscribed to each). */
  batchDeliveries: number;
  /** Bytes one publish may make Herald send: each event's body times the endpoints subscribed to its type, summed. */
  fanOutBytes: number;
  /** Events one replay may send again (each to one endpoint, or to every endpoint subscribed to its type). */
  replayEvents: number;
}

/**
 * Far above what a big customer needs: a few endpoints is usual (Stripe allows
 * 16, GitHub 20 per event), 500 leaves room for one per region or per tenant;
 * a batch of 500 events to 20 endpoints each; a 1 MiB event to 64 endpoints, or
 * a 128 KiB one to all 500.
 */
export const DEFAULT_LIMITS: Readonly<AccountLimits> = Object.freeze({
  endpointsPerAccount: 500,
  batchDeliveries: 10_000,
  fanOutBytes: 64 * 1024 * 1024,
  replayEvents: 100_000,
});

/** Where the API listens unless told otherwise; the CLI's API commands look there by default. */
export const DEFAULT_HOST = '127.0.0.1';
export const DEFAULT_PORT = 8080;

export const DEFAULT_BODY_TIMEOUT_MS = 30_000;
/** HERALD_DATABASE_TIMEOUT_MS: Herald's queries are short; one that takes 10 s means a database in trouble. */
export const DEFAULT_DATABASE_TIMEOUT_MS = 10_000;
/** HERALD_SHUTDOWN_TIMEOUT_MS: the 15 s grace period for in-flight deliveries, then time to write their results. */
export const DEFAULT_SHUTDOWN_TIMEOUT_MS = 30_000;

/** A receiver answers within 10 seconds. Fixed: it is part of the published contract. */
export const REQUEST_TIMEOUT_MS = 10_000;

export const DEFAULT_RATE_LIMITS: Readonly<RateLimits> = Object.freeze({ managementPerMinute: 1_200, ingestPerMinute: 120_000, unauthenticatedPerMinute: 60 });

export type Env = Record<string, string | undefined>;
export type Flags = Partial<Record<'role' | 'host' | 'port' | 'dataDir' | 'databaseUrl' | 'logLevel', string>> & { dev?: boolean };

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

function integer(setting: string, raw: string | undefined, fallback: number, min: number, max: number): number {
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(setting, `must be a whole number, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(setting, `must be between ${min} and ${max}, got ${value}`);
  return value;
}

function decimal(setting: string, raw: string | undefined, fallback: number, min: number, max: number): number {
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < min || value > max) {
    throw new ConfigError(setting, `must be a number between ${min} and ${max}, got "${raw}"`);
  }
  return value;
}

function oneOf<T extends string>(setting: string, raw: string | undefined, allowed: readonly T[], fallback: T): T {
  if (raw === undefined || raw === '') return fallback;
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new ConfigError(setting, `must be one of ${allowed.join(', ')}, got "${raw}"`);
  }
  return raw as T;
}

/** Long enough not to be guessed, and sendable in a header as it is. */
function metricsToken(raw: string | undefined): string | undefined {
  if (raw === undefined || raw === '') return undefined;
  if (!/^[\x21-\x7e]+$/.test(raw)) throw new ConfigError('HERALD_METRICS_TOKEN', 'must be printable ASCII without spaces; generate one with: openssl rand -hex 32');
  if (raw.length < 16) throw new ConfigError('HERALD_METRICS_TOKEN', `must be at least 16 characters, got ${raw.length}; generate one with: openssl rand -hex 32`);
  return raw;
}

function encryptionKey(raw: string | undefined): Buffer | undefined {
  if (raw === undefined || raw === '') return undefined;
  const key = Buffer.from(raw, 'base64');
  if (key.length !== 32) {
    throw new ConfigError(
      'HERALD_ENCRYPTION_KEY',
      `must be 32 bytes in base64 (44 characters); generate one with: openssl rand -base64 32`,
    );
  }
  return key;
}

function databaseUrl(raw: string | undefined): string | undefined {
  if (raw === undefined || raw === '') return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError('DATABASE_URL', 'must be a URL such as postgres://user@host:5432/herald');
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw new ConfigError('DATABASE_URL', `must start with postgres:// or postgresql://, got ${url.protocol}//`);
  }
  return raw;
}

function flag(setting: string, raw: string | undefined): boolean {
  if (raw === undefined || raw === '' || raw === '0' || raw === 'false') return false;
  if (raw === '1' || raw === 'true') return true;
  throw new ConfigError(setting, `must be 1 or 0 (true or false), got "${raw}"`);
}

/** A comma- or space-separated list of CIDR ranges ("10.0.0.0/8, fd00::/8"); a bare address is a range of one. */
function networks(setting: string, raw: string | undefined): string[] {
  const items = (raw ?? '').split(/[\s,]+/).filter(Boolean);
  return items.map((item) => {
    try {
      const { address, prefix } = parseCidr(item);
      return `${address}/${prefix}`;
    } catch (err) {
      throw new ConfigError(setting, (err as Error).message);
    }
  });
}

/** This machine only: `localhost`, 127.0.0.0/8 or ::1 (also written [::1], or as ::ffff:127.x). */
function isLoopbackHost(host: string): boolean {
  const name = host.trim().toLowerCase().replace(/^\[(.*)\]$/, '$1');
  if (name === 'localhost') return true;
  const loopback = new BlockList();
  loopback.addSubnet('127.0.0.0', 8, 'ipv4');
  loopback.addAddress('::1', 'ipv6');
  loopback.addSubnet('::ffff:127.0.0.0', 104, 'ipv6');
  if (isIPv4(name)) return loopback.check(name, 'ipv4');
  return isIPv6(name) && loopback.check(name, 'ipv6');
}

/**
 * The data directory alone, for commands that need nothing else from the
 * settings (`herald listen` reads the development CA there) and should not
 * fail on a setting they do not use.
 */
export function dataDirOf({ env = {}, flags = {} }: { env?: Env; flags?: Flags } = {}): string {
  // Relative to where the user typed the command: npm runs a workspace's
  // scripts in the workspace folder (so `npm start` at the root would use
  // packages/server/data while `npx herald` uses ./data), and sets INIT_CWD
  // to the folder npm was started in.
  return resolve(env.INIT_CWD ?? '', flags.dataDir ?? env.HERALD_DATA_DIR ?? 'data');
}

export function loadConfig({ env = {}, flags = {} }: { env?: Env; flags?: Flags } = {}): Readonly<Config> {
  const defaults = DEFAULT_RETRY;
  const dev = flags.dev === true || flag('--dev / HERALD_DEV', env.HERALD_DEV);
  const allowedNetworks = networks('HERALD_ALLOWED_NETWORKS', env.HERALD_ALLOWED_NETWORKS);
  const succeededDays = integer('HERALD_RETENTION_DAYS', env.HERALD_RETENTION_DAYS, DEFAULT_RETENTION.succeededDays, 1, 36_500);
  const concurrency = integer('HERALD_CONCURRENCY', env.HERALD_CONCURRENCY, 1024, 1, 10_000);
  const config: Config = {
    role: oneOf('--role / HERALD_ROLE', flags.role ?? env.HERALD_ROLE, ROLES, 'all'),
    host: flags.host ?? env.HERALD_HOST ?? DEFAULT_HOST,
    port: integer('--port / HERALD_PORT', flags.port ?? env.HERALD_PORT, DEFAULT_PORT, 0, 65535),
    dataDir: dataDirOf({ env, flags }),
    databaseUrl: databaseUrl(flags.databaseUrl ?? env.DATABASE_URL),
    allowedNetworks: dev ? [...new Set([...allowedNetworks, ...LOOPBACK_NETWORKS])] : allowedNetworks,
    dev,
    extraCaFile: env.NODE_EXTRA_CA_CERTS || undefined,
    trustedProxies: networks('HERALD_TRUSTED_PROXIES', env.HERALD_TRUSTED_PROXIES),
    encryptionKey: encryptionKey(env.HERALD_ENCRYPTION_KEY),
    logLevel: oneOf('--log-level / HERALD_LOG_LEVEL', flags.logLevel ?? env.HERALD_LOG_LEVEL, LOG_LEVELS, 'info'),
    logFormat: oneOf('HERALD_LOG_FORMAT', env.HERALD_LOG_FORMAT, ['json', 'pretty'] as const, 'json'),
    metrics: {
      port: env.HERALD_METRICS_PORT ? integer('HERALD_METRICS_PORT', env.HERALD_METRICS_PORT, 0, 0, 65535) : undefined,
      token: metricsToken(env.HERALD_METRICS_TOKEN),
      endpointLabels: flag('HERALD_METRICS_ENDPOINT_LABELS', env.HERALD_METRICS_ENDPOINT_LABELS),
    },
    maxBodyBytes: integer('HERALD_MAX_BODY_BYTES', env.HERALD_MAX_BODY_BYTES, 1024 * 1024, 1024, 64 * 1024 * 1024),
    bodyTimeoutMs: integer('HERALD_BODY_TIMEOUT_MS', env.HERALD_BODY_TIMEOUT_MS, DEFAULT_BODY_TIMEOUT_MS, 100, 3_600_000),
    databaseTimeoutMs: integer('HERALD_DATABASE_TIMEOUT_MS', env.HERALD_DATABASE_TIMEOUT_MS, DEFAULT_DATABASE_TIMEOUT_MS, 100, 600_000),
    shutdownTimeoutMs: integer('HERALD_SHUTDOWN_TIMEOUT_MS', env.HERALD_SHUTDOWN_TIMEOUT_MS, DEFAULT_SHUTDOWN_TIMEOUT_MS, 1_000, 3_600_000),
    rateLimits: {
      managementPerMinute: integer('HERALD_RATE_LIMIT', env.HERALD_RATE_LIMIT, DEFAULT_RATE_LIMITS.managementPerMinute, 0, 10_000_000),
      ingestPerMinute: integer('HERALD_INGEST_RATE_LIMIT', env.HERALD_INGEST_RATE_LIMIT, DEFAULT_RATE_LIMITS.ingestPerMinute, 0, 100_000_000),
      unauthenticatedPerMinute: integer('HERALD_UNAUTHENTICATED_RATE_LIMIT', env.HERALD_UNAUTHENTICATED_RATE_LIMIT, DEFAULT_RATE_LIMITS.unauthenticatedPerMinute, 0, 1_000_000),
    },
    limits: {
      endpointsPerAccount: integer('HERALD_MAX_ENDPOINTS_PER_ACCOUNT', env.HERALD_MAX_ENDPOINTS_PER_ACCOUNT, DEFAULT_LIMITS.endpointsPerAccount, 1, 1_000_000),
      batchDeliveries: integer('HERALD_MAX_BATCH_DELIVERIES', env.HERALD_MAX_BATCH_DELIVERIES, DEFAULT_LIMITS.batchDeliveries, 1, 100_000_000),
      fanOutBytes: integer('HERALD_MAX_FANOUT_BYTES', env.HERALD_MAX_FANOUT_BYTES, DEFAULT_LIMITS.fanOutBytes, 1024, 1024 ** 4),
      replayEvents: integer('HERALD_MAX_REPLAY_EVENTS', env.HERALD_MAX_REPLAY_EVENTS, DEFAULT_LIMITS.replayEvents, 1, 100_000_000),
    },
    panel: {
      cookieSecure: oneOf('HERALD_COOKIE_SECURE', env.HERALD_COOKIE_SECURE, ['auto', 'always', 'never'] as const, DEFAULT_PANEL_AUTH.cookieSecure),
      sessionIdleMs: integer('HERALD_SESSION_IDLE_MS', env.HERALD_SESSION_IDLE_MS, DEFAULT_PANEL_AUTH.sessionIdleMs, 60_000, 30 * 86_400_000),
      sessionMaxMs: integer('HERALD_SESSION_MAX_MS', env.HERALD_SESSION_MAX_MS, DEFAULT_PANEL_AUTH.sessionMaxMs, 60_000, 365 * 86_400_000),
    },
    retention: {
      succeededDays,
      // Unset, it follows a raised HERALD_RETENTION_DAYS up instead of falling below it.
      undeliveredDays: integer(
        'HERALD_RETENTION_UNDELIVERED_DAYS',
        env.HERALD_RETENTION_UNDELIVERED_DAYS,
        Math.max(DEFAULT_RETENTION.undeliveredDays, succeededDays),
        1,
        36_500,
      ),
    },
    dispatcher: {
      concurrency,
      // Across all workers, so it is not bounded by one worker's HERALD_CONCURRENCY:
      // four workers of 16 may well keep 32 requests in flight to one endpoint.
      endpointConcurrency: integer('HERALD_ENDPOINT_CONCURRENCY', env.HERALD_ENDPOINT_CONCURRENCY, 64, 1, 1_000),
      originConcurrency: integer('HERALD_ORIGIN_CONCURRENCY', env.HERALD_ORIGIN_CONCURRENCY, 64, 1, 1_000),
      leaseMs: integer('HERALD_LEASE_MS', env.HERALD_LEASE_MS, 60_000, 15_000, 3_600_000),
      pollMs: integer('HERALD_POLL_MS', env.HERALD_POLL_MS, 1_000, 10, 60_000),
      requestTimeoutMs: REQUEST_TIMEOUT_MS,
      disableAfter: 20,
      retry: {
        baseMs: integer('HERALD_RETRY_BASE_MS', env.HERALD_RETRY_BASE_MS, defaults.baseMs, 1, 86_400_000),
        factor: decimal('HERALD_RETRY_FACTOR', env.HERALD_RETRY_FACTOR, defaults.factor, 1, 100),
        capMs: integer('HERALD_RETRY_CAP_MS', env.HERALD_RETRY_CAP_MS, defaults.capMs, 1, 30 * 86_400_000),
        jitter: decimal('HERALD_RETRY_JITTER', env.HERALD_RETRY_JITTER, defaults.jitter, 0, 0.5),
        maxRetries: 6,
      },
    },
  };
  // What failed is what an operator comes back for: it is never dropped before what succeeded.
  if (config.retention.undeliveredDays < config.retention.succeededDays) {
    throw new ConfigError('HERALD_RETENTION_UNDELIVERED_DAYS', `must not be less than HERALD_RETENTION_DAYS (${config.retention.succeededDays})`);
  }
  if (config.panel.sessionIdleMs > config.panel.sessionMaxMs) {
    throw new ConfigError('HERALD_SESSION_IDLE_MS', `must not exceed HERALD_SESSION_MAX_MS (${config.panel.sessionMaxMs})`);
  }
  // Development mode lets every tenant send to this machine's loopback
  // services; reachable from elsewhere, any API key holder could use that to
  // reach them (docs/decisions/0015-development-mode.md).
  if (config.dev && !isLoopbackHost(config.host)) {
    throw new ConfigError(
      '--dev / HERALD_DEV',
      `is for a developer's own machine and needs Herald to listen there only, but --host / HERALD_HOST is ${config.host}. ` +
        'Leave HERALD_HOST unset (127.0.0.1) or set it to localhost, 127.0.0.1 or ::1; on a server, run without --dev',
    );
  }
  // Both on one port would be one listener asked to serve twice.
  if (config.metrics.port !== undefined && config.metrics.port !== 0 && config.metrics.port === config.port && config.role !== 'worker') {
    throw new ConfigError('HERALD_METRICS_PORT', `must differ from the API's port (${config.port}); to scrape the API port, set HERALD_METRICS_TOKEN instead`);
  }
  if (config.databaseUrl && !config.encryptionKey) {
    throw new ConfigError(
      'HERALD_ENCRYPTION_KEY',
      'is required with DATABASE_URL (signing secrets are encrypted under it); generate one with: openssl rand -base64 32, and keep it safe',
    );
  }
  return deepFreeze(config);
}

/** The published schedule: 1 min, 5 min, 25 min, ~2 h, ~10 h, ~2 days, each ±20 %. */
export const DEFAULT_RETRY: Readonly<RetrySchedule> = Object.freeze({
  baseMs: 60_000,
  factor: 5,
  capMs: 3 * 86_400_000,
  jitter: 0.2,
  maxRetries: 6,
});

function deepFreeze<T extends object>(value: T): Readonly<T> {
  for (const child of Object.values(value)) {
    if (child && typeof child === 'object' && !Buffer.isBuffer(child)) deepFreeze(child);
  }
  return Object.freeze(value);
}
