import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { DEFAULT_PANEL_AUTH, DEFAULT_RETRY, loadConfig, type DispatcherConfig, type PanelAuthConfig, type RateLimits, type RetentionConfig } from '../../src/config.ts';
import { AddressPolicy } from '../../src/core/address-policy.ts';
import { PasswordHasher } from '../../src/core/passwords.ts';
import { SetupToken } from '../../src/core/setup-token.ts';
import type { LoginLimiter } from '../../src/http/login-limiter.ts';
import { requestHash, serialiseEnvelope } from '../../src/core/envelope.ts';
import { BUILTIN_EVENT_TYPES } from '../../src/core/event-types.ts';
import type { NewEvent } from '../../src/storage/queries/events.ts';
import { createDispatcher, type Dispatcher, type DispatcherParts, type TickReport } from '../../src/dispatcher/dispatcher.ts';
import { databaseParts } from '../../src/dispatcher/parts.ts';
import { createAgent, type ResolveHost } from '../../src/outbound/agent.ts';
import { sendAttempt } from '../../src/outbound/send.ts';
import { buildApp } from '../../src/http/app.ts';
import type { PanelOptions } from '../../src/http/panel.ts';
import { createAccount, createApiKey } from '../../src/services/accounts.ts';
import { createServiceDeps, type ServiceDeps } from '../../src/services/deps.ts';
import type { OutboundDeps } from '../../src/services/test-event.ts';
import type { Engine } from '../../src/storage/db.ts';
import { databaseTime } from '../../src/core/clock.ts';
import { createMetrics, type Metrics } from '../../src/metrics/metrics.ts';
import { createTestClock, type TestClock } from './clock.ts';
import { createTestDb, type TestDb } from './engines.ts';
import { OpenApiChecker } from './openapi-check.ts';
import { TLS } from './tls.ts';

export const TEST_KEY = Buffer.alloc(32, 7);

/** The test receivers listen on loopback, which Herald refuses unless allowed. */
export const TEST_NETWORKS = ['127.0.0.0/8', '::1/128'];
export const TEST_ADDRESSES = new AddressPolicy(TEST_NETWORKS);

export interface TestHerald {
  db: TestDb;
  deps: ServiceDeps;
  /** How the API sends test events (for another app built on the same deps). */
  outbound: OutboundDeps;
  app: FastifyInstance;
  dispatcher: Dispatcher;
  clock: TestClock;
  accountId: string;
  apiKey: string;
  /** First-run setup's token (what Herald would print as the setup link). */
  setupToken: SetupToken;
  /** Everything the API (and, with `metrics`, the dispatcher) logged. */
  logs(): string;
  /** The metrics, when asked for (`options.metrics`). */
  metrics: Metrics | undefined;
  /** Calls the API with the test account's key (or `as`); the response is checked against the OpenAPI document. */
  api(method: string, url: string, body?: unknown, as?: string, headers?: Record<string, string>): Promise<{ status: number; json: any; headers: Record<string, unknown> }>;
  /** Calls the API with only the headers given (no key); the response is checked against the OpenAPI document. */
  call(
    method: string,
    url: string,
    options?: { body?: unknown; headers?: Record<string, string>; remoteAddress?: string },
  ): Promise<{ status: number; json: any; headers: Record<string, unknown>; cookies: Array<{ name: string; value: string; [k: string]: unknown }> }>;
  /** Ticks until a tick claims nothing, advancing the clock past each retry. */
  drain(options?: { advanceMs?: number; maxTicks?: number }): Promise<TickReport>;
  newAccount(name?: string): Promise<{ accountId: string; apiKey: string }>;
  close(): Promise<void>;
}

/**
 * Another dispatcher on a test Herald's database, with its own agent (as a
 * second worker process would have); `parts` replaces any of its parts.
 * Stopping it closes its agent.
 */
export function createTestDispatcher(
  h: { db: TestDb; clock: TestClock },
  config: DispatcherConfig,
  parts: Partial<DispatcherParts> = {},
): Dispatcher {
  const agent = createAgent({ connections: config.originConcurrency, addresses: TEST_ADDRESSES, timeoutMs: config.requestTimeoutMs, connect: { ca: TLS.ca } });
  const dispatcher = createDispatcher({
    ...databaseParts(h.db, config),
    config,
    clock: h.clock.now,
    encryptionKey: TEST_KEY,
    send: (req) => sendAttempt(agent, req),
    random: () => 0.5,
    ...parts,
  });
  return {
    ...dispatcher,
    get inFlight() {
      return dispatcher.inFlight;
    },
    async stop(graceMs) {
      await dispatcher.stop(graceMs);
      await agent.destroy();
    },
  };
}

export function testDispatcherConfig(overrides: Partial<DispatcherConfig> = {}): DispatcherConfig {
  const base = loadConfig({ env: {} }).dispatcher;
  return { ...base, concurrency: 32, endpointConcurrency: 8, retry: { ...DEFAULT_RETRY }, ...overrides };
}

/** A Herald in this process on a fresh database: the API (inject) and a dispatcher driven by tick(). */
export async function createTestHerald(
  engine: Engine,
  options: {
    dispatcher?: Partial<DispatcherConfig>;
    random?: () => number;
    rateLimits?: Partial<RateLimits>;
    panel?: PanelOptions;
    panelAuth?: Partial<PanelAuthConfig>;
    /** Which networks it may send to; loopback (the test receivers) and the public internet by default. */
    addresses?: AddressPolicy;
    /** How the API's test sends and the dispatcher resolve host names (DNS unless given). */
    lookup?: ResolveHost;
    passwords?: PasswordHasher;
    loginLimiter?: LoginLimiter;
    /** HERALD_TRUSTED_PROXIES; none by default. */
    trustedProxies?: string[];
    /** How long a client has to send a whole request (the default otherwise). */
    bodyTimeoutMs?: number;
    /** How long deliveries are kept (the defaults otherwise: 30 and 90 days). */
    retention?: RetentionConfig;
    /**
     * Metrics as main.ts wires them: counted by the publish service and the
     * dispatcher (whose attempts are then logged too), GET /metrics with `token`.
     */
    metrics?: { endpointLabels?: boolean; token?: string; backlogCacheMs?: number; logLevel?: string };
  } = {},
): Promise<TestHerald> {
  const db = await createTestDb(engine);
  const clock = createTestClock();
  const setupToken = new SetupToken();
  // As main.ts builds them.
  const metrics = options.metrics
    ? createMetrics({ endpointLabels: options.metrics.endpointLabels ?? false, db, now: () => databaseTime(clock.now), backlogCacheMs: options.metrics.backlogCacheMs })
    : undefined;
  const deps = createServiceDeps({ db, encryptionKey: TEST_KEY, clock: clock.now, addresses: options.addresses ?? TEST_ADDRESSES, passwords: options.passwords, setupToken, metrics });
  const config = testDispatcherConfig(options.dispatcher);
  const logStream = new PassThrough();
  const logChunks: Buffer[] = [];
  logStream.on('data', (c: Buffer) => logChunks.push(c));
  const agent = createAgent({ connections: 4, addresses: deps.addresses, timeoutMs: config.requestTimeoutMs, connect: { ca: TLS.ca }, lookup: options.lookup });
  const outbound: OutboundDeps = { send: (request) => sendAttempt(agent, { ...request, timeoutMs: config.requestTimeoutMs }) };
  const app = await buildApp({
    ...deps,
    disableAfter: config.disableAfter,
    outbound,
    rateLimits: { managementPerMinute: 0, ingestPerMinute: 0, unauthenticatedPerMinute: 0, ...options.rateLimits },
    maxBodyBytes: 1024 * 1024,
    bodyTimeoutMs: options.bodyTimeoutMs,
    logLevel: options.metrics?.logLevel ?? 'info',
    logStream,
    metricsToken: options.metrics?.token,
    panel: options.panel,
    panelAuth: { ...DEFAULT_PANEL_AUTH, ...options.panelAuth },
    loginLimiter: options.loginLimiter,
    setupToken,
    trustedProxies: options.trustedProxies,
    retention: options.retention,
  });
  const dispatcherAgent = createAgent({ connections: config.originConcurrency, addresses: deps.addresses, timeoutMs: config.requestTimeoutMs, connect: { ca: TLS.ca }, lookup: options.lookup });
  const dispatcher = createDispatcher({
    ...databaseParts(db, config, metrics ? { metrics, log: app.log } : undefined),
    config,
    clock: clock.now,
    encryptionKey: TEST_KEY,
    send: (req) => sendAttempt(dispatcherAgent, req),
    random: options.random ?? (() => 0.5),
    ...(metrics ? { log: app.log } : {}),
  });

  const openApi = new OpenApiChecker((await app.inject({ method: 'GET', url: '/openapi.json' })).json());

  async function newAccount(name = 'Acme Logistics') {
    const account = await createAccount(db, name);
    const { key } = await createApiKey(db, account.id);
    return { accountId: account.id, apiKey: key };
  }
  const main = await newAccount();

  const herald: TestHerald = {
    db,
    deps,
    outbound,
    app,
    dispatcher,
    clock,
    ...main,
    setupToken,
    metrics,
    logs: () => Buffer.concat(logChunks).toString('utf8'),
    async api(method, url, body, as, headers = {}) {
      const res = await app.inject({
        method: method as 'GET',
        url,
        headers: { authorization: `Bearer ${as ?? main.apiKey}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
        payload: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      });
      // Every response any test sees is checked against the OpenAPI document.
      openApi.check(method, url, { status: res.statusCode, contentType: res.headers['content-type'] as string | undefined, body: res.body });
      return { status: res.statusCode, json: res.body ? JSON.parse(res.body) : undefined, headers: res.headers };
    },
    async call(method, url, { body, headers = {}, remoteAddress } = {}) {
      const res = await app.inject({
        method: method as 'GET',
        url,
        headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
        payload: body === undefined ? undefined : JSON.stringify(body),
        ...(remoteAddress ? { remoteAddress } : {}),
      });
      openApi.check(method, url, { status: res.statusCode, contentType: res.headers['content-type'] as string | undefined, body: res.body });
      return { status: res.statusCode, json: res.body ? JSON.parse(res.body) : undefined, headers: res.headers, cookies: res.cookies as any };
    },
    async drain({ advanceMs = 4 * 86_400_000, maxTicks = 500 } = {}) {
      const total: TickReport = { claimed: 0, succeeded: 0, retrying: 0, failed: 0, skipped: 0, givenBack: 0, late: 0 };
      for (let i = 0; i < maxTicks; i++) {
        const r = await dispatcher.tick();
        if (r.claimed === 0) {
          // Nothing due now: move past every scheduled retry and look once more.
          clock.advance(advanceMs);
          const again = await dispatcher.tick();
          if (again.claimed === 0) break;
          for (const k of Object.keys(total) as (keyof TickReport)[]) total[k] += again[k];
          continue;
        }
        for (const k of Object.keys(total) as (keyof TickReport)[]) total[k] += r[k];
      }
      return total;
    },
    newAccount,
    async close() {
      await dispatcher.stop(1000);
      await app.close();
      await agent.close();
      await dispatcherAgent.destroy();
      await db.close();
    },
  };
  return herald;
}

/** A valid alarm.created record: the catalog's example, with non-ASCII text in it. */
export function alarmData(overrides: Record<string, unknown> = {}) {
  const example = BUILTIN_EVENT_TYPES.find((t) => t.name === 'alarm.created')!.example;
  return { ...example, message: 'Température au-dessus de 8 °C', ...overrides } as Record<string, unknown>;
}

/** An event as the API hands it to storage (insertEventsWithDeliveries), for tests that write it directly. */
export function newEvent(p: { accountId: string; type: string; data: unknown; createdAt: Date; id?: string }): NewEvent {
  const id = p.id ?? randomUUID();
  return {
    accountId: p.accountId,
    id,
    type: p.type,
    createdAt: p.createdAt,
    body: serialiseEnvelope({ id, type: p.type, created_at: p.createdAt.toISOString(), data: p.data }),
    requestHash: requestHash(p.type, p.data),
  };
}
