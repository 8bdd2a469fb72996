import type { FastifyInstance } from 'fastify';
import { HeraldError } from '../../errors.ts';
import { COUNT_CAP, parseEventFilter } from '../../services/event-search.ts';
import { publishEvents, type EventInput } from '../../services/events.ts';
import { redeliverEvent } from '../../services/redeliver.ts';
import { attemptsOfEvent } from '../../storage/queries/attempts.ts';
import { listDeliveriesOfEvent } from '../../storage/queries/deliveries.ts';
import { getEvent } from '../../storage/queries/events.ts';
import { countEvents, searchEvents } from '../../storage/queries/event-search.ts';
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

interface SearchQuery {
  id?: string;
  type?: string;
  since?: string;
  until?: string;
  endpoint_id?: string;
  state?: string;
}

const searchQueryProperties = {
  id: { type: 'string', description: 'Event ids, comma-separated (at most 1,000).' },
  type: { type: 'string', description: 'Comma-separated event types.', examples: ['alarm.created,alarm.resolved'] },
  since: { type: 'string', description: 'Events created at or after this date-time.', examples: ['2026-11-22T00:00:00Z'] },
  until: { type: 'string', description: 'Events created before this date-time.' },
  endpoint_id: { type: 'string', description: 'Events with a delivery to this endpoint (with `state`: whose newest delivery to it is in one of those states).' },
  state: { type: 'string', description: 'Comma-separated delivery states: pending, succeeded, failed, skipped.', examples: ['failed,skipped'] },
} as const;

const QUERY_NAMES = { ids: 'query.id', types: 'query.type', since: 'query.since', until: 'query.until', endpoint_id: 'query.endpoint_id', states: 'query.state' } as const;

function filterOfQuery(q: SearchQuery) {
  return parseEventFilter({ ids: q.id, types: q.type, since: q.since, until: q.until, endpoint_id: q.endpoint_id, states: q.state }, QUERY_NAMES);
}

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

  app.get<{ Querystring: SearchQuery & { limit?: string; cursor?: string } }>(
    '/v1/events',
    {
      schema: {
        tags,
        operationId: 'listEvents',
        summary: 'Search events',
        description:
          'Newest first. Filter by id, type (comma-separated), time (since, inclusive; until, exclusive), endpoint and delivery state. An event\u2019s state toward an endpoint is the state of its newest delivery there (a replay or resend adds one); `state` keeps the events whose state toward some endpoint, or toward `endpoint_id` when given, is one of those listed. `endpoint_id` alone keeps the events that have a delivery to it. GET /v1/events/count counts the same selection.',
        querystring: { type: 'object', additionalProperties: false, properties: { ...pageQueryProperties, ...searchQueryProperties } },
        response: { 200: ok(pageOfSchema('Event'), 'A page of events, newest first.'), ...problems(400, 401, 429) },
      },
    },
    async (req) => {
      const page = parseTimePage(req.query);
      const rows = await searchEvents(deps.db, { accountId: req.accountId, filter: filterOfQuery(req.query), limit: page.limit + 1, before: page.before });
      const { items, next_cursor } = timePageOf(rows, page.limit, (r) => r.created_at);
      return { data: items.map(eventJson), next_cursor };
    },
  );

  app.get<{ Querystring: SearchQuery }>(
    '/v1/events/count',
    {
      schema: {
        tags,
        operationId: 'countEvents',
        summary: 'Count the events a search selects',
        description: `The same filters as GET /v1/events. Counting stops after ${COUNT_CAP.toLocaleString('en')}: beyond that, \`count\` is ${COUNT_CAP} and \`capped\` is true ("more than ${COUNT_CAP.toLocaleString('en')}"), so a count costs no more than that many events.`,
        querystring: { type: 'object', additionalProperties: false, properties: searchQueryProperties },
        response: { 200: ok('EventCount', 'How many events match.'), ...problems(400, 401, 429) },
      },
    },
    async (req) => {
      const n = await countEvents(deps.db, { accountId: req.accountId, filter: filterOfQuery(req.query), cap: COUNT_CAP });
      return { count: Math.min(n, COUNT_CAP), capped: n > COUNT_CAP };
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
