import type { FastifyInstance } from 'fastify';
import { HeraldError } from '../../errors.ts';
import { publishEvents, type EventInput } from '../../services/events.ts';
import { listDeliveriesOfEvent } from '../../storage/queries/deliveries.ts';
import { getEvent } from '../../storage/queries/events.ts';
import type { RouteDeps } from '../app.ts';

const eventBody = {
  type: 'object',
  additionalProperties: false,
  required: ['type', 'data'],
  properties: {
    id: { type: 'string', description: 'Optional UUID chosen by the producer; publishing it again is idempotent.' },
    type: { type: 'string', description: 'An event type from the catalog, e.g. alarm.created.' },
    data: { description: 'The record, validated against the JSON Schema of the type.' },
  },
} as const;

/** Largest batch accepted by POST /v1/events/batch. */
export const MAX_BATCH = 500;

export function eventRoutes(app: FastifyInstance, deps: RouteDeps): void {
  app.post<{ Body: EventInput }>('/v1/events', { schema: { body: eventBody } }, async (req, reply) => {
    const [event] = await publishEvents(deps, req.accountId, [req.body], { batch: false });
    if (event!.duplicate) reply.header('idempotent-replayed', 'true');
    return reply.code(202).send(event);
  });

  app.post<{ Body: { events: EventInput[] } }>(
    '/v1/events/batch',
    {
      schema: {
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['events'],
          properties: { events: { type: 'array', minItems: 1, maxItems: MAX_BATCH, items: eventBody } },
        },
      },
    },
    async (req, reply) => reply.code(202).send({ data: await publishEvents(deps, req.accountId, req.body.events, { batch: true }) }),
  );

  app.get<{ Params: { id: string } }>(
    '/v1/events/:id',
    { schema: { params: { type: 'object', required: ['id'], properties: { id: { type: 'string', format: 'uuid' } } } } },
    async (req) => {
      const event = await getEvent(deps.db, req.accountId, req.params.id);
      if (!event) throw new HeraldError('not_found', `no event with id ${req.params.id} in this account`);
      const deliveries = await listDeliveriesOfEvent(deps.db, req.accountId, event.id);
      return {
        id: event.id,
        type: event.type,
        created_at: event.created_at.toISOString(),
        payload: JSON.parse(event.body.toString('utf8')),
        deliveries: deliveries.map((d) => ({
          id: d.id,
          endpoint_id: d.endpoint_id,
          state: d.state,
          attempts: d.attempts,
          next_attempt_at: d.state === 'pending' ? d.next_attempt_at.toISOString() : null,
          last_status: d.last_status,
          last_error: d.last_error,
          updated_at: d.updated_at.toISOString(),
        })),
      };
    },
  );
}
