import type { FastifyInstance } from 'fastify';
import { HeraldError } from '../../errors.ts';
import { cancelReplay, createReplay, MAX_RUNNING_REPLAYS, replayNotFound, type ReplayCreator, type ReplayInput } from '../../services/replays.ts';
import { MAX_EVENT_IDS } from '../../services/event-search.ts';
import { getReplay, listReplays, type ReplayRow } from '../../storage/queries/replays.ts';
import { pageQuerySchema, parseTimePage, timePageOf } from '../pagination.ts';
import { ok, pageOfSchema, problems } from '../schemas.ts';
import type { RouteDeps } from '../app.ts';

const tags = ['Replays'];

const idParams = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', format: 'uuid', description: 'The replay id.' } },
} as const;

const list = (description: string) => ({ type: 'array', items: { type: 'string' }, minItems: 1, description }) as const;

const replayBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    filter: {
      type: 'object',
      additionalProperties: false,
      description: 'Select the events a search would (GET /v1/events), by the same filters.',
      properties: {
        types: list('Event types.'),
        since: { type: 'string', description: 'Created at or after this date-time.' },
        until: { type: 'string', description: 'Created before this date-time (at the latest, now).' },
        endpoint_id: { type: 'string', description: 'Events with a delivery to this endpoint (with `states`: whose newest delivery to it is in one of them).' },
        states: list('Delivery states: pending, succeeded, failed, skipped.'),
      },
    },
    event_ids: list(`Or these events (at most ${MAX_EVENT_IDS}).`),
    endpoint_id: { type: 'string', description: 'Send to this endpoint only; left out, to every endpoint subscribed to each event\u2019s type.' },
    dry_run: { type: 'boolean', description: 'Only count what would be sent: nothing is created.' },
  },
} as const;

export function replayJson(r: ReplayRow) {
  return {
    id: r.id,
    state: r.state,
    filter: r.filter,
    endpoint_id: r.endpoint_id,
    total: r.total,
    done: r.done,
    deliveries: r.deliveries,
    skipped: { disabled: r.skipped_disabled, unsubscribed: r.skipped_unsubscribed },
    created_by: r.created_by_key_id
      ? { type: 'api_key' as const, id: r.created_by_key_id, name: r.created_by_name }
      : { type: 'user' as const, id: r.created_by_user_id, name: r.created_by_name },
    created_at: r.created_at.toISOString(),
    updated_at: r.updated_at.toISOString(),
    finished_at: r.finished_at?.toISOString() ?? null,
  };
}

export function replayRoutes(app: FastifyInstance, deps: RouteDeps): void {
  app.post<{ Body: ReplayInput }>(
    '/v1/replays',
    {
      schema: {
        tags,
        operationId: 'createReplay',
        summary: 'Replay past events',
        description: `Sends the selected events again, each as a new delivery with its own attempts (the event id stays the same: receivers that deduplicate by it see a repeat). Select with \`filter\` or \`event_ids\`; send to \`endpoint_id\` or to every endpoint subscribed to each event\u2019s type. Disabled endpoints get nothing. With \`dry_run\` it only counts (200); otherwise the replay runs in the background (202) and GET /v1/replays/{id} shows its progress. At most ${MAX_RUNNING_REPLAYS} replays run at once per account; one replay selects at most HERALD_MAX_REPLAY_EVENTS events (100,000 by default). Send an Idempotency-Key to create it once whatever the retries.`,
        body: replayBody,
        response: {
          200: ok('ReplayPreview', 'dry_run: what would be sent.'),
          202: ok('Replay', 'Created, running in the background.'),
          ...problems(400, 401, 404, 409, 413, 415, 422, 429),
        },
      },
    },
    async (req, reply) => {
      const principal = req.principal;
      if (!principal) throw new HeraldError('unauthorized', 'sign in or send an API key');
      // An embedded panel (a portal session) never gets here: replays are not among its routes.
      if (principal.kind === 'portal') throw new HeraldError('not_in_portal', 'replays are not available in an embedded panel (a portal session); use an API key of the account');
      const creator: ReplayCreator = principal.kind === 'api_key' ? { kind: 'api_key', keyId: principal.keyId } : { kind: 'session', userId: principal.userId };
      const result = await createReplay(deps, req.accountId, creator, req.body ?? {});
      if ('dry_run' in result) return reply.code(200).send(result);
      return reply.code(202).send(replayJson(result));
    },
  );

  app.get<{ Querystring: { limit?: string; cursor?: string } }>(
    '/v1/replays',
    {
      schema: {
        tags,
        operationId: 'listReplays',
        summary: 'List replays',
        description: 'Newest first: who replayed what, when, and how far each got.',
        querystring: pageQuerySchema,
        response: { 200: ok(pageOfSchema('Replay'), 'A page of replays, newest first.'), ...problems(400, 401, 429) },
      },
    },
    async (req) => {
      const page = parseTimePage(req.query);
      const rows = await listReplays(deps.db, { accountId: req.accountId, limit: page.limit + 1, before: page.before });
      const { items, next_cursor } = timePageOf(rows, page.limit, (r) => r.created_at);
      return { data: items.map(replayJson), next_cursor };
    },
  );

  app.get<{ Params: { id: string } }>(
    '/v1/replays/:id',
    {
      schema: {
        tags,
        operationId: 'getReplay',
        summary: 'Get a replay and its progress',
        params: idParams,
        response: { 200: ok('Replay', 'The replay.'), ...problems(400, 401, 404, 429) },
      },
    },
    async (req) => {
      const replay = await getReplay(deps.db, req.accountId, req.params.id);
      if (!replay) throw replayNotFound(req.params.id);
      return replayJson(replay);
    },
  );

  app.post<{ Params: { id: string } }>(
    '/v1/replays/:id/cancel',
    {
      schema: {
        tags,
        operationId: 'cancelReplay',
        summary: 'Stop a running replay',
        description: 'No further batch starts; the deliveries already created are sent as usual.',
        params: idParams,
        response: { 200: ok('Replay', 'The replay, canceled.'), ...problems(400, 401, 404, 409, 429) },
      },
    },
    async (req) => replayJson(await cancelReplay(deps, req.accountId, req.params.id)),
  );
}
