import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { RateLimits } from '../config.ts';
import { HeraldError } from '../errors.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Which limit a route counts against; management unless it says ingest. */
    rateLimitGroup?: 'ingest' | 'management';
  }
}

const groupOf = (req: FastifyRequest) => (req.routeOptions.config.rateLimitGroup === 'ingest' ? 'ingest' : 'management');

/**
 * Per-principal rate limits (an API key, or a panel session's user), with the
 * IETF RateLimit-Limit / RateLimit-Remaining / RateLimit-Reset headers on every
 * response and Retry-After on a 429. Publishing events has its own, higher
 * limit, so a burst of ingest never locks a customer out of the panel.
 *
 * Counters live in this process: N API processes allow N times the limit.
 * Runs after authentication (preHandler), so it counts only requests whose
 * principal is known.
 */
export async function registerRateLimits(app: FastifyInstance, limits: RateLimits, principalOf: (req: FastifyRequest) => string): Promise<void> {
  const max = { ingest: limits.ingestPerMinute, management: limits.managementPerMinute };
  await app.register(rateLimit, {
    global: true,
    hook: 'preHandler',
    timeWindow: 60_000,
    enableDraftSpec: true,
    keyGenerator: (req) => `${groupOf(req)}:${principalOf(req)}`,
    max: (req) => max[groupOf(req)] || Number.MAX_SAFE_INTEGER,
    allowList: (req) => max[groupOf(req)] === 0,
    errorResponseBuilder: (req, context) => {
      const err = new HeraldError(
        'rate_limited',
        `more than ${context.max} ${groupOf(req) === 'ingest' ? 'publish' : 'management'} requests a minute with this credential; retry in ${Math.ceil(context.ttl / 1000)} s, or ask the operator to raise ${groupOf(req) === 'ingest' ? 'HERALD_INGEST_RATE_LIMIT' : 'HERALD_RATE_LIMIT'}`,
      );
      // @fastify/rate-limit throws what this returns and needs its status on it.
      return Object.assign(err, { statusCode: 429 });
    },
  });
}
