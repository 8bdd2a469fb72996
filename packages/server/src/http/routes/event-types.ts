import type { FastifyInstance } from 'fastify';
import { HeraldError } from '../../errors.ts';
import { getEventTypes, listEventTypes } from '../../storage/queries/event-types.ts';
import { eventTypeJson } from '../representations.ts';
import { ok, problems, ref } from '../schemas.ts';
import type { RouteDeps } from '../app.ts';

const tags = ['Event types'];

export function eventTypeRoutes(app: FastifyInstance, deps: RouteDeps): void {
  app.get(
    '/v1/event-types',
    {
      schema: {
        tags,
        operationId: 'listEventTypes',
        summary: 'List the event type catalog',
        description: 'Every type an endpoint can subscribe to, with its JSON Schema and an example record. The catalog is short, so it is not paginated.',
        response: { 200: ok({ type: 'object', required: ['data'], properties: { data: { type: 'array', items: ref('EventType') } } }, 'The catalog, by name.'), ...problems(401, 429) },
      },
    },
    async () => ({ data: (await listEventTypes(deps.db)).map(eventTypeJson) }),
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
