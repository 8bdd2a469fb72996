import type { FastifyInstance } from 'fastify';
import { HeraldError, invalidField } from '../../errors.ts';
import { getEventTypes, listEventTypes } from '../../storage/queries/event-types.ts';
import { eventTypeJson } from '../representations.ts';
import { pageQueryProperties } from '../pagination.ts';
import { ok, pageOfSchema, problems, ref } from '../schemas.ts';
import type { RouteDeps } from '../app.ts';

const tags = ['Event types'];

export function eventTypeRoutes(app: FastifyInstance, deps: RouteDeps): void {
  app.get<{ Querystring: { limit?: string; cursor?: string } }>(
    '/v1/event-types',
    {
      schema: {
        tags,
        operationId: 'listEventTypes',
        summary: 'List the event type catalog',
        description: 'Every type an endpoint can subscribe to, with its JSON Schema and an example record, by name. Pages hold up to 100 (default 100 here: the catalog is usually shorter).',
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { ...pageQueryProperties, limit: { ...pageQueryProperties.limit, description: 'Items per page, 1 to 100 (default 100).' } },
        },
        response: { 200: ok(pageOfSchema('EventType'), 'A page of the catalog, by name.'), ...problems(400, 401, 429) },
      },
    },
    async (req) => {
      const limit = req.query.limit === undefined ? 100 : Number(req.query.limit);
      if (limit < 1 || limit > 100) throw invalidField('query.limit', 'must be between 1 and 100');
      const rows = await listEventTypes(deps.db, { limit: limit + 1, after: req.query.cursor });
      const items = rows.slice(0, limit);
      return { data: items.map(eventTypeJson), next_cursor: rows.length > limit ? items[items.length - 1]!.name : null };
    },
  );

  app.get<{ Params: { name: string } }>(
    '/v1/event-types/:name',
    {
      schema: {
        tags,
        operationId: 'getEventType',
        summary: 'Get one event type',
        params: { type: 'object', required: ['name'], properties: { name: { type: 'string', maxLength: 200, examples: ['alarm.created'] } } },
        response: { 200: ok('EventType', 'The event type.'), ...problems(401, 404, 429) },
      },
    },
    async (req) => {
      const [row] = await getEventTypes(deps.db, [req.params.name]);
      if (!row) throw new HeraldError('not_found', `no event type named "${req.params.name}"; list the catalog with GET /v1/event-types`);
      return eventTypeJson(row);
    },
  );
}
