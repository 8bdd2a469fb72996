import { createHash, timingSafeEqual } from 'node:crypto';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { HeraldError } from '../errors.ts';
import type { Metrics } from '../metrics/metrics.ts';
import { problemOf, sendProblem, toProblem } from './problem.ts';
import { echoRequestId, requestIdOf } from './request-id.ts';

export interface MetricsRouteOptions {
  metrics: Metrics;
  /** HERALD_METRICS_TOKEN: scrapers must send it as a bearer token; none asked for when undefined (the metrics port only). */
  token: string | undefined;
}

const digest = (text: string) => createHash('sha256').update(text).digest();

/** The bearer token, compared in constant time (digests first, so the lengths match). */
function checkToken(request: FastifyRequest, reply: FastifyReply, token: string): void {
  const match = /^Bearer ([\x21-\x7e]+)$/.exec(request.headers.authorization ?? '');
  if (match && timingSafeEqual(digest(match[1]!), digest(token))) return;
  reply.header('www-authenticate', 'Bearer realm="herald-metrics"');
  throw new HeraldError('unauthorized', 'GET /metrics needs the metrics token: send "Authorization: Bearer" followed by the value of HERALD_METRICS_TOKEN');
}

/**
 * GET /metrics in Prometheus' text format. Left out of the API reference:
 * it is for the operator's scraper, not for API clients.
 */
export function metricsRoute(app: FastifyInstance, options: MetricsRouteOptions): void {
  app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
    if (options.token !== undefined) checkToken(request, reply, options.token);
    const text = await options.metrics.scrape();
    return reply.type(options.metrics.contentType).header('cache-control', 'no-store').send(text);
  });
}

/** Without a token, the API port tells a scraper where the metrics are instead (and the panel never answers for it). */
export function metricsNotHere(app: FastifyInstance): void {
  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) =>
    sendProblem(
      reply,
      problemOf('route_not_found', 'GET /metrics is served on the API port only when HERALD_METRICS_TOKEN is set; otherwise scrape the metrics port (HERALD_METRICS_PORT)'),
    ),
  );
}

/**
 * The metrics port (HERALD_METRICS_PORT): GET /metrics and nothing else, in
 * every role, a worker's too. Errors are problems, as on the API port.
 */
export async function listenMetrics(
  options: MetricsRouteOptions & { host: string; port: number; log: FastifyBaseLogger },
): Promise<{ url: string; close(): Promise<void> }> {
  const app = Fastify({ loggerInstance: options.log, genReqId: requestIdOf, return503OnClosing: false });
  echoRequestId(app);
  app.setErrorHandler((error, request, reply) => sendProblem(reply, toProblem(error, request)));
  app.setNotFoundHandler((request, reply) =>
    sendProblem(reply, problemOf('route_not_found', `${request.method} ${request.url} is not served on the metrics port; scrape GET /metrics`)),
  );
  metricsRoute(app, options);
  const url = await app.listen({ host: options.host, port: options.port });
  return { url, close: () => app.close() };
}
