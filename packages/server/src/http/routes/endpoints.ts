import type { FastifyInstance } from 'fastify';
import * as endpoints from '../../services/endpoints.ts';
import { listEndpoints } from '../../storage/queries/endpoints.ts';
import { endpointJson } from '../representations.ts';
import { pageOf, pageQuerySchema, parsePage } from '../pagination.ts';
import type { RouteDeps } from '../app.ts';

const idParams = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', format: 'uuid' } },
} as const;

const endpointBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    url: { type: 'string', description: 'The https address that receives events.' },
    description: { type: 'string', maxLength: 500 },
    event_types: { type: 'array', items: { type: 'string' }, minItems: 1, description: 'Event types this endpoint receives.' },
  },
} as const;

type EndpointBody = { url?: string; description?: string; event_types?: string[] };

export function endpointRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const json = (row: Parameters<typeof endpointJson>[0]) => endpointJson(row, deps.disableAfter);

  app.post<{ Body: EndpointBody }>('/v1/endpoints', { schema: { body: { ...endpointBody, required: ['url', 'event_types'] } } }, async (req, reply) => {
    const { endpoint, secret } = await endpoints.createEndpoint(deps, req.accountId, req.body);
    // The only response that ever carries the secret.
    return reply.code(201).header('cache-control', 'no-store').send({ ...json(endpoint), secret });
  });

  app.get<{ Querystring: { limit?: string; cursor?: string } }>('/v1/endpoints', { schema: { querystring: pageQuerySchema } }, async (req) => {
    const page = parsePage(req.query);
    const rows = await listEndpoints(deps.db, req.accountId, { limit: page.limit + 1, after: page.after });
    const { items, next_cursor } = pageOf(rows, page.limit);
    return { data: items.map(json), next_cursor };
  });

  app.get<{ Params: { id: string } }>('/v1/endpoints/:id', { schema: { params: idParams } }, async (req) =>
    json(await endpoints.getEndpoint(deps, req.accountId, req.params.id)),
  );

  app.patch<{ Params: { id: string }; Body: EndpointBody }>('/v1/endpoints/:id', { schema: { params: idParams, body: endpointBody } }, async (req) =>
    json(await endpoints.updateEndpoint(deps, req.accountId, req.params.id, req.body)),
  );

  app.delete<{ Params: { id: string } }>('/v1/endpoints/:id', { schema: { params: idParams } }, async (req, reply) => {
    await endpoints.deleteEndpoint(deps, req.accountId, req.params.id);
    return reply.code(204).send();
  });
}
