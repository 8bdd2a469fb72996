import Fastify, { type FastifyInstance } from 'fastify';
import type { Writable } from 'node:stream';
import { HeraldError } from '../errors.ts';
import { authenticate } from '../services/accounts.ts';
import type { ServiceDeps } from '../services/deps.ts';
import { panelRoutes, type PanelOptions } from './panel.ts';
import { problemOf, sendProblem, toProblem } from './problem.ts';
import { endpointRoutes } from './routes/endpoints.ts';
import { eventRoutes } from './routes/events.ts';
import { eventTypeRoutes } from './routes/event-types.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The account of the API key that authenticated this request. */
    accountId: string;
  }
}

export interface RouteDeps extends ServiceDeps {
  /** Consecutive failed deliveries before disabling, shown as "n of 20". */
  disableAfter: number;
}

export interface AppOptions extends RouteDeps {
  maxBodyBytes: number;
  logLevel: string;
  /** Where logs go; stdout by default. Tests pass a stream to inspect them. */
  logStream?: Writable;
  /** Serve the control panel at `/` from this build; without it, only the API. */
  panel?: PanelOptions;
}

/**
 * Builds the HTTP API without listening (fastify's build/listen split), so
 * tests drive it with `app.inject()`.
 */
export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    logger: {
      level: options.logLevel,
      // Keys and cookies never reach a log line, whatever a serializer does later.
      redact: { paths: ['req.headers.authorization', 'req.headers.cookie', 'req.headers["x-api-key"]'], censor: '[redacted]' },
      ...(options.logStream ? { stream: options.logStream } : {}),
    },
    bodyLimit: options.maxBodyBytes,
    // Strict: no coercion, no silent removal of fields a user sent.
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, allErrors: true } },
    return503OnClosing: true,
    // Errors raised before routing (a malformed %-escape in the path) are problems too.
    frameworkErrors: (error, request, reply) => sendProblem(reply, toProblem(error, request)),
  });
  // The API takes JSON only: without this, fastify's built-in text/plain parser
  // would turn a wrongly typed body into a confusing schema error instead of a 415.
  app.removeContentTypeParser('text/plain');

  app.decorateRequest('accountId', '');
  app.setErrorHandler((error, request, reply) => sendProblem(reply, toProblem(error, request)));
  app.setNotFoundHandler((request, reply) =>
    sendProblem(reply, problemOf('route_not_found', `${request.method} ${request.url} is not a Herald route; see the API reference in the README`)),
  );

  app.get('/healthz', async () => {
    await options.db.query('SELECT 1');
    return { status: 'ok' };
  });

  await app.register(async (v1) => {
    v1.addHook('onRequest', async (request) => {
      const auth = await authenticate(options.db, request.headers.authorization);
      request.accountId = auth.accountId;
    });
    endpointRoutes(v1, options);
    eventRoutes(v1, options);
    eventTypeRoutes(v1, options);
  });

  if (options.panel) await app.register(panelRoutes, options.panel);

  return app;
}

