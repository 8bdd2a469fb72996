import type { FastifyInstance } from 'fastify';
import { endpointStats, STATS_DELIVERY_CAP, STATS_LATENCY_SAMPLE, STATS_WINDOWS } from '../../services/endpoint-stats.ts';
import { ok, problems } from '../schemas.ts';
import type { RouteDeps } from '../app.ts';

const time = { type: 'string', format: 'date-time' } as const;
const count = { type: 'integer', minimum: 0 } as const;
const counts = { succeeded: count, failed: count, pending: count, skipped: count } as const;
const ms = { anyOf: [{ type: 'integer', minimum: 0 }, { type: 'null' }] } as const;

const statsSchema = {
  type: 'object',
  required: ['window', 'from', 'to', 'deliveries', 'success_rate', 'capped', 'buckets', 'latency'],
  properties: {
    window: { type: 'string', enum: Object.keys(STATS_WINDOWS) },
    from: { ...time, description: 'The start of the first bucket.' },
    to: { ...time, description: 'The end of the last bucket: now, rounded up to a whole bucket.' },
    deliveries: {
      type: 'object',
      description: 'Deliveries created in the window, each counted once however many attempts it took, by state now. Tests are not deliveries.',
      required: ['total', 'succeeded', 'failed', 'pending', 'skipped'],
      properties: { total: count, ...counts },
    },
    success_rate: {
      anyOf: [{ type: 'number', minimum: 0, maximum: 1 }, { type: 'null' }],
      description: 'Succeeded deliveries out of those settled (succeeded or failed), from 0 to 1; null when none has settled.',
    },
    capped: {
      type: 'boolean',
      description: `True when a state has more than ${STATS_DELIVERY_CAP.toLocaleString('en')} deliveries in the window: that state is counted as ${STATS_DELIVERY_CAP.toLocaleString('en')}.`,
    },
    buckets: {
      type: 'array',
      description: 'The window cut into equal buckets, oldest first: 12 of 5 minutes (1h), 24 of an hour (24h), 28 of 6 hours (7d).',
      items: { type: 'object', required: ['start', ...Object.keys(counts)], properties: { start: time, ...counts } },
    },
    latency: {
      type: 'object',
      description: `How long the endpoint's requests took, tests left out: the newest ${STATS_LATENCY_SAMPLE} in the window still in the attempt log (which keeps about 100 per endpoint). Null when there are none.`,
      required: ['requests', 'p50_ms', 'p95_ms', 'p99_ms', 'max_ms'],
      properties: { requests: count, p50_ms: ms, p95_ms: ms, p99_ms: ms, max_ms: ms },
    },
  },
} as const;

export function endpointStatsRoutes(app: FastifyInstance, deps: RouteDeps): void {
  app.get<{ Params: { id: string }; Querystring: { window?: string } }>(
    '/v1/endpoints/:id/stats',
    {
      schema: {
        tags: ['Endpoints'],
        operationId: 'getEndpointStats',
        summary: 'Delivery health of an endpoint',
        description:
          'The success rate of the endpoint\u2019s deliveries over a window (1h, 24h or 7d), their counts by state in buckets for a chart, and percentiles of the time its requests took. Each delivery counts once, whatever its number of attempts; tests are left out. The work is bounded: counts stop at a cap (capped says so).',
        params: { type: 'object', required: ['id'], properties: { id: { type: 'string', format: 'uuid', description: 'The endpoint id.' } } },
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { window: { type: 'string', enum: Object.keys(STATS_WINDOWS), default: '24h', description: 'How far back: 1h, 24h (the default) or 7d.' } },
        },
        response: { 200: ok(statsSchema, 'The endpoint\u2019s delivery health over the window.'), ...problems(400, 401, 404, 429) },
      },
    },
    async (req) => {
      const s = await endpointStats(deps, req.accountId, req.params.id, req.query.window);
      return {
        ...s,
        from: s.from.toISOString(),
        to: s.to.toISOString(),
        buckets: s.buckets.map((b) => ({ ...b, start: b.start.toISOString() })),
      };
    },
  );
}
