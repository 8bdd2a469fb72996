import cookie from '@fastify/cookie';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyRequest } from 'fastify';
import type { Writable } from 'node:stream';
import { DEFAULT_BODY_TIMEOUT_MS, DEFAULT_PANEL_AUTH, DEFAULT_RATE_LIMITS, type PanelAuthConfig, type RateLimits } from '../config.ts';
import type { ServiceDeps } from '../services/deps.ts';
import type { OutboundDeps } from '../services/test-event.ts';
import { authHook, type Principal } from './auth.ts';
import { clientErrorHandler } from './client-errors.ts';
import { idempotency } from './idempotency.ts';
import type { SetupToken } from '../core/setup-token.ts';
import type { LoginLimiter } from './login-limiter.ts';
import { registerOpenApi } from './openapi.ts';
import { panelRoutes, type PanelOptions } from './panel.ts';
import { registerInputChecks } from './input-checks.ts';
import { metricsNotHere, metricsRoute } from './metrics.ts';
import { echoRequestId, requestIdOf } from './request-id.ts';
import { databaseProblem, problemOf, refuseWhileClosing, sendProblem, toProblem } from './problem.ts';
import { checkReadiness, READINESS_TIMEOUT_MS } from '../storage/readiness.ts';
import { registerRateLimits } from './rate-limit.ts';
import { clientKey } from '../core/client-key.ts';
import { HeraldError } from '../errors.ts';
import { UnauthenticatedLimiter } from './unauthenticated-limiter.ts';
import { apiKeyRoutes } from './routes/api-keys.ts';
import { attemptRoutes } from './routes/attempts.ts';
import { endpointRoutes } from './routes/endpoints.ts';
import { endpointStatsRoutes } from './routes/endpoint-stats.ts';
import { eventRoutes } from './routes/events.ts';
import { eventTypeRoutes } from './routes/event-types.ts';
import { replayRoutes } from './routes/replays.ts';
import { sessionRoutes } from './routes/session.ts';
import { portalSessionRoutes } from './routes/portal-sessions.ts';
import { portalPageRoutes, withoutPortalToken } from './portal.ts';
import { ok, SHARED_SCHEMAS } from './schemas.ts';

export type { Principal };

declare module 'fastify' {
  interface FastifyRequest {
    /** The account of the credential that authenticated this request. */
    accountId: string;
    principal: Principal | undefined;
  }
}

export interface RouteDeps extends ServiceDeps {
  /** Consecutive failed deliveries before disabling, shown as "n of 20". */
  disableAfter: number;
  /** How the API sends test events. */
  outbound: OutboundDeps;
}

export interface AppOptions extends RouteDeps {
  maxBodyBytes: number;
  /** How long a client has to send a whole request; 30 s unless given. */
  bodyTimeoutMs?: number;
  logLevel: string;
  /** Defaults to the configuration's defaults. */
  rateLimits?: RateLimits;
  /** Where logs go; stdout by default. Tests pass a stream to inspect them. */
  logStream?: Writable;
  /** The process's logger (its format and level); one made from `logLevel` and `logStream` otherwise. */
  logger?: FastifyBaseLogger;
  /**
   * HERALD_METRICS_TOKEN: with it (and `metrics`), GET /metrics on this port,
   * for scrapers that send it. Without it the API port has no /metrics: it
   * would be open to anyone who can reach the API.
   */
  metricsToken?: string;
  /** Serve the control panel at `/` from this build; without it, only the API. */
  panel?: PanelOptions;
  /** Panel sign-in settings; the configuration's defaults otherwise. */
  panelAuth?: PanelAuthConfig;
  /** Failed sign-in counters; tests pass their own. */
  loginLimiter?: LoginLimiter;
  /** First-run setup's one-time token; without it, setup is only possible with `herald users create`. */
  setupToken?: SetupToken;
  /**
   * Proxies (addresses or CIDR ranges) whose X-Forwarded-For is believed:
   * `request.ip` is then the client they forwarded for. Empty or absent: the
   * connection's own address, whatever the headers say.
   */
  trustedProxies?: readonly string[];
  /**
   * True once the process has begun to stop. /healthz and /readyz then answer
   * 503 `shutting_down` at once, so that load balancers stop sending here
   * while the deliveries in flight finish; the API serves until it closes.
   */
  stopping?: () => boolean;
}

/**
 * Keys and cookies never reach a log line, whatever a serializer does later;
 * nor do a failed statement's parameters (PGlite's errors carry them, and
 * they can hold a password's hash or a sealed signing secret).
 */
export const LOG_REDACT = {
  paths: ['req.headers.authorization', 'req.headers.cookie', 'req.headers["x-api-key"]', 'err.params', 'err.cause.params'],
  censor: '[redacted]',
};

/**
 * A request's log fields, as fastify's own, but a portal link's token never
 * reaches a log line: its path is logged as `/portal/[redacted]`.
 */
export const LOG_SERIALIZERS = {
  req(req: FastifyRequest) {
    const version = req.headers['accept-version'];
    return {
      method: req.method,
      url: withoutPortalToken(req.url ?? ''),
      version: Array.isArray(version) ? version[0] : version,
      host: req.host,
      remoteAddress: req.ip,
      remotePort: req.socket?.remotePort,
    };
  },
};

/**
 * Builds the HTTP API without listening (fastify's build/listen split), so
 * tests drive it with `app.inject()`.
 */
export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const bodyTimeoutMs = options.bodyTimeoutMs ?? DEFAULT_BODY_TIMEOUT_MS;
  const app = Fastify({
    ...(options.logger
      ? { loggerInstance: options.logger }
      : { logger: { level: options.logLevel, redact: LOG_REDACT, serializers: LOG_SERIALIZERS, ...(options.logStream ? { stream: options.logStream } : {}) } }),
    // Every log line of a request carries its id (reqId), the proxy's or the client's if it sent a sane one.
    genReqId: requestIdOf,
    bodyLimit: options.maxBodyBytes,
    // A request, headers and body, must arrive within the bound (fastify turns
    // Node's default off). Node uses the smaller of the two timeouts for the
    // whole request, so the headers' must not be longer; and it looks for
    // overdue requests every second, not every 30.
    requestTimeout: bodyTimeoutMs,
    http: { requestTimeout: bodyTimeoutMs, headersTimeout: bodyTimeoutMs, connectionsCheckingInterval: Math.min(1_000, bodyTimeoutMs) },
    clientErrorHandler: clientErrorHandler(bodyTimeoutMs),
    // Strict: no coercion, no silent removal of fields a user sent.
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, allErrors: true } },
    // refuseWhileClosing answers it as a problem, like every other error.
    return503OnClosing: false,
    // request.ip (the sign-in throttle, the per-client rate limit, the logs) is the
    // connection's address unless it is a trusted proxy's; proxy-addr then walks
    // X-Forwarded-For from the right, past trusted hops, to the first client.
    trustProxy: options.trustedProxies?.length ? [...options.trustedProxies] : false,
    // Errors raised before routing (a malformed %-escape in the path) are problems too.
    frameworkErrors: (error, request, reply) => sendProblem(reply, toProblem(error, request)),
  });
  // The API takes JSON only: without this, fastify's built-in text/plain parser
  // would turn a wrongly typed body into a confusing schema error instead of a 415.
  app.removeContentTypeParser('text/plain');
  echoRequestId(app);
  registerInputChecks(app);
  refuseWhileClosing(app);

  await app.register(cookie);
  app.decorateRequest('accountId', '');
  app.decorateRequest('principal', undefined);
  app.setErrorHandler((error, request, reply) => sendProblem(reply, toProblem(error, request)));
  app.setNotFoundHandler((request, reply) =>
    sendProblem(reply, problemOf('route_not_found', `${request.method} ${request.url} is not a Herald route; see the API reference at /docs`)),
  );
  for (const schema of SHARED_SCHEMAS) app.addSchema(schema);
  await registerOpenApi(app);

  const refuseIfStopping = () => {
    if (options.stopping?.()) throw new HeraldError('shutting_down', 'this Herald process is stopping; send traffic to another one');
  };
  // Outside /v1: no credential, no rate limit, so a probe is never refused for either.
  const status = { type: 'object', required: ['status'], properties: { status: { type: 'string', enum: ['ok'] } } } as const;
  app.get(
    '/healthz',
    {
      schema: {
        tags: ['Operations'],
        operationId: 'health',
        summary: 'Liveness: the process answers',
        description: 'Answers without touching the database, so a database outage never gets a live process restarted. For readiness to take traffic, see /readyz.',
        security: [],
        response: { 200: ok(status, 'The process is alive.') },
      },
    },
    async () => {
      refuseIfStopping();
      return { status: 'ok' as const };
    },
  );
  app.get(
    '/readyz',
    {
      schema: {
        tags: ['Operations'],
        operationId: 'ready',
        summary: 'Readiness: the database answers, takes writes and has the expected schema',
        description: `200 when the database answers within ${READINESS_TIMEOUT_MS / 1000} s, takes writes (not a standby in recovery, not read-only) and holds exactly the migrations this Herald knows; otherwise 503 \`database_unavailable\`, its \`reason\` saying which.`,
        security: [],
        response: { 200: ok(status, 'Herald can serve.') },
      },
    },
    async (_request, reply) => {
      refuseIfStopping();
      const readiness = await checkReadiness(options.db);
      if (readiness.ready) return { status: 'ok' as const };
      return sendProblem(reply, databaseProblem(readiness.reason, readiness.detail));
    },
  );

  // Outside /v1: the scraper has a token of its own, not an account's key.
  if (options.metrics && options.metricsToken) metricsRoute(app, { metrics: options.metrics, token: options.metricsToken });
  else if (options.metrics) metricsNotHere(app);

  await app.register(async (v1) => {
    const panelAuth = options.panelAuth ?? DEFAULT_PANEL_AUTH;
    const rateLimits = options.rateLimits ?? DEFAULT_RATE_LIMITS;
    v1.addHook('onRequest', authHook(options, panelAuth, new UnauthenticatedLimiter(rateLimits.unauthenticatedPerMinute)));
    await registerRateLimits(v1, rateLimits, (req) =>
      !req.principal ? `ip:${clientKey(req.ip)}` : req.principal.kind === 'api_key'
          ? `key:${req.principal.keyId}`
          : req.principal.kind === 'portal'
            ? `portal:${req.principal.portalSessionId}`
            : `user:${req.principal.userId}`,
    );
    sessionRoutes(v1, { ...options, panelAuth, loginLimiter: options.loginLimiter, setupToken: options.setupToken });
    idempotency(v1, options);
    endpointRoutes(v1, options);
    attemptRoutes(v1, options);
    endpointStatsRoutes(v1, options);
    eventRoutes(v1, options);
    replayRoutes(v1, options);
    eventTypeRoutes(v1, options);
    apiKeyRoutes(v1, options);
    portalSessionRoutes(v1, options);
  });

  if (options.panel) {
    await app.register(panelRoutes, options.panel);
    await app.register(portalPageRoutes, { root: options.panel.root, db: options.db, clock: options.clock });
  }

  return app;
}
