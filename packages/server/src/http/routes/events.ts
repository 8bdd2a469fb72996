import type { FastifyInstance } from 'fastify';
import { HeraldError, invalidField } from '../../errors.ts';
import { parseTime } from '../../services/endpoint-state.ts';
import { publishEvents, type EventInput } from '../../services/events.ts';
import { redeliverEvent } from '../../services/redeliver.ts';
import { attemptsOfEvent } from '../../storage/queries/attempts.ts';
import { listDeliveriesOfEvent } from '../../storage/queries/deliveries.ts';
import { getEvent, listEvents } from '../../storage/queries/events.ts';
import { attemptJson, deliveryJson, eventJson } from '../representations.ts';
import { pageQueryProperties, parseTimePage, timePageOf } from '../pagination.ts';
import { ok, pageOfSchema, problems, ref } from '../schemas.ts';
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

const eventIdParams = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', format: 'uuid', description: 'The event id.' } },
} as const;

/** Largest batch accepted by POST /v1/events/batch. */
export const MAX_BATCH = 500;

const tags = ['Events'];

export function eventRoutes(app: FastifyInstance, deps: RouteDeps): void {
  app.post<{ Body: EventInput }>(
    '/v1/events',
    {
      config: { rateLimitGroup: 'ingest' },
      schema: {
        tags,
        operationId: 'publishEvent',
        summary: 'Publish an event',
        description:
          'Validates the data against the type\u2019s JSON Schema, stores the event and queues one delivery per subscribed endpoint. Publishing the same id again with the same body returns the original (with `Idempotent-Replayed: true`); with another body it is a 409.',
        body: eventBody,
        response: { 202: ok('PublishedEvent', 'Accepted: stored, and its deliveries queued.'), ...problems(400, 401, 409, 413, 415, 422, 429) },
      },
    },
    async (req, reply) => {
      const [event] = await publishEvents(deps, req.accountId, [req.body], { batch: false });
      if (event!.duplicate) reply.header('idempotent-replayed', 'true');
      return reply.code(202).send(event);
    },
  );

  app.post<{ Body: { events: EventInput[] } }>(
    '/v1/events/batch',
    {
      config: { rateLimitGroup: 'ingest' },
      schema: {
        tags,
        operationId: 'publishEvents',
        summary: 'Publish up to 500 events at once',
        description: 'All or nothing: when one event is invalid, none is stored, and `errors` names each invalid field as events[i]....',
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['events'],
          properties: { events: { type: 'array', minItems: 1, maxItems: MAX_BATCH, items: eventBody } },
        },
        response: {
          202: ok({ type: 'object', required: ['data'], properties: { data: { type: 'array', items: ref('PublishedEvent') } } }, 'Accepted: every event stored, in the order sent.'),
          ...problems(400, 401, 409, 413, 415, 422, 429),
        },
      },
    },
    async (req, reply) => reply.code(202).send({ data: await publishEvents(deps, req.accountId, req.body.events, { batch: true }) }),
  );

  app.get<{ Querystring: { limit?: string; cursor?: string; type?: string; since?: string; until?: string } }>(
    '/v1/events',
    {
      schema: {
        tags,
        operationId: 'listEvents',
        summary: 'List events',
        description: 'Newest first. Filter by type (comma-separated) and by time: since (inclusive) and until (exclusive).',
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            ...pageQueryProperties,
            type: { type: 'string', description: 'Comma-separated event types.', examples: ['alarm.created,alarm.resolved'] },
            since: { type: 'string', description: 'Events created at or after this date-time.', examples: ['2026-11-22T00:00:00Z'] },
            until: { type: 'string', description: 'Events created before this date-time.' },
          },
        },
        response: { 200: ok(pageOfSchema('Event'), 'A page of events, newest first.'), ...problems(400, 401, 429) },
      },
    },
    async (req) => {
      const page = parseTimePage(req.query);
      const types = req.query.type === undefined ? undefined : req.query.type.split(',').map((t) => t.trim());
      if (types?.some((t) => t === '')) throw invalidField('query.type', 'must be event type names separated by commas, e.g. alarm.created,alarm.resolved');
      const since = req.query.since === undefined ? undefined : parseTime('query.since', req.query.since);
      const until = req.query.until === undefined ? undefined : parseTime('query.until', req.query.until);
      const rows = await listEvents(deps.db, { accountId: req.accountId, types, since, until, limit: page.limit + 1, before: page.before });
      const { items, next_cursor } = timePageOf(rows, page.limit, (r) => r.created_at);
      return { data: items.map(eventJson), next_cursor };
    },
  );

  app.get<{ Params: { id: string } }>(
    '/v1/events/:id',
    {
      schema: {
        tags,
        operationId: 'getEvent',
        summary: 'Get an event with its deliveries and attempts',
        description: 'The delivery to each endpoint, its state, and the attempts the log still keeps.',
        params: eventIdParams,
        response: { 200: ok('EventDetail', 'The event, its deliveries and their attempts.'), ...problems(400, 401, 404, 429) },
      },
    },
    async (req) => {
      const event = await getEvent(deps.db, req.accountId, req.params.id);
      if (!event) throw new HeraldError('not_found', `no event with id ${req.params.id} in this account`);
      const [deliveries, attempts] = await Promise.all([
        listDeliveriesOfEvent(deps.db, req.accountId, event.id),
        attemptsOfEvent(deps.db, req.accountId, event.id),
      ]);
      return {
        ...eventJson(event),
        deliveries: deliveries.map((d) => ({
          ...deliveryJson(d),
          attempt_log: attempts.filter((a) => a.delivery_id === d.id).map(attemptJson),
        })),
      };
    },
  );

  app.post<{ Params: { id: string }; Body: { endpoint_id: string } }>(
    '/v1/events/:id/redeliver',
    {
      schema: {
        tags,
        operationId: 'redeliverEvent',
        summary: 'Send an event to one endpoint again',
        description:
          'A finished delivery starts a fresh set of attempts now; a delivery waiting for a retry is brought forward; one being sent right now is left as it is. The endpoint must be enabled and subscribe to the event\u2019s type.',
        params: eventIdParams,
        body: { type: 'object', additionalProperties: false, required: ['endpoint_id'], properties: { endpoint_id: { type: 'string', format: 'uuid' } } },
        response: { 202: ok('Delivery', 'The delivery, queued (or left as it was while in flight).'), ...problems(400, 401, 404, 409, 413, 415, 422, 429) },
      },
    },
    async (req, reply) => reply.code(202).send(deliveryJson(await redeliverEvent(deps, req.accountId, req.params.id, req.body))),
  );
}
