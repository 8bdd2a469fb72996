import type { FastifyInstance } from 'fastify';
import * as endpoints from '../../services/endpoints.ts';
import { disableEndpoint, enableEndpoint, recoverEndpoint, type Actor } from '../../services/endpoint-state.ts';
import { DEFAULT_RETENTION } from '../../config.ts';
import { sendTestEvent, TEST_EVENT_TYPE } from '../../services/test-event.ts';
import { lastAttempts } from '../../storage/queries/attempts.ts';
import { listEndpoints, type EndpointFilter, type EndpointRow } from '../../storage/queries/endpoints.ts';
import { MAX_HEADERS, MAX_TOTAL_LENGTH, MAX_VALUE_LENGTH } from '../../core/custom-headers.ts';
import { MAX_METADATA_KEYS, MAX_METADATA_KEY_LENGTH, MAX_METADATA_VALUE_LENGTH } from '../../core/metadata.ts';
import { attemptRecordJson, endpointJson } from '../representations.ts';
import { pageOf, pageQuerySchema, parsePage, staleCursor } from '../pagination.ts';
import { bodyOptional, ok, pageOfSchema, problems, ref } from '../schemas.ts';
import type { RouteDeps } from '../app.ts';

export const idParams = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', format: 'uuid', description: 'The endpoint id.' } },
} as const;

const endpointFields = {
  url: { type: 'string', description: 'The https address that receives events.', examples: ['https://example.com/webhooks/herald'] },
  description: { type: 'string', maxLength: 500 },
  event_types: {
    type: 'array',
    items: { type: 'string' },
    minItems: 1,
    description: 'Event types this endpoint receives; see GET /v1/event-types.',
    examples: [['alarm.created', 'alarm.resolved']],
  },
  rate_limit: {
    type: ['integer', 'null'],
    minimum: endpoints.RATE_LIMIT_MIN,
    maximum: endpoints.RATE_LIMIT_MAX,
    description:
      'The most requests per second Herald sends to this endpoint, from 1 to 10,000, with bursts of up to one second\u2019s worth; null (the default) for no limit but the in-flight caps. On an update, null removes the limit.',
    examples: [50],
  },
  headers: {
    type: 'array',
    maxItems: MAX_HEADERS,
    description: `Custom headers added to every request to this endpoint, at most ${MAX_HEADERS}, names and values adding up to ${MAX_TOTAL_LENGTH.toLocaleString('en')} characters. A name is an HTTP token and may not be one Herald or HTTP sets (the X-Service- headers, Content-Type, Content-Length, Host, User-Agent, Connection, Transfer-Encoding, …). A value is 1 to ${MAX_VALUE_LENGTH.toLocaleString('en')} printable ASCII characters. A secret value is stored encrypted and never shown again; on an update, a secret header given without a value keeps its value. The list given replaces the whole list; [] removes them all.`,
    items: {
      type: 'object',
      additionalProperties: false,
      required: ['name'],
      properties: {
        name: { type: 'string', examples: ['X-Api-Key'] },
        value: { type: 'string' },
        secret: { type: 'boolean', default: false },
      },
    },
    examples: [[{ name: 'X-Api-Key', value: 'k_live_4f9a1c0e6b2d8e73', secret: true }]],
  },
  metadata: {
    type: 'object',
    description: `Your own labels: up to ${MAX_METADATA_KEYS} string keys (1 to ${MAX_METADATA_KEY_LENGTH} characters, no square brackets) to string values (up to ${MAX_METADATA_VALUE_LENGTH} characters). The object given replaces the whole object; {} removes it all. Filter the list with metadata[key]=value.`,
    examples: [{ team: 'billing', region: 'eu' }],
  },
  signature_scheme: {
    type: 'string',
    enum: ['herald', 'standard-webhooks'],
    description:
      'How requests are signed: herald (the default; X-Service-* headers) or standard-webhooks (webhook-id, webhook-timestamp, webhook-signature). On an update, a different scheme replaces the signing secret with a new one of that scheme\u2019s form, returned once in the response as secret, and ends any rotation overlap.',
  },
} as const;

type EndpointBody = {
  url?: string;
  description?: string;
  event_types?: string[];
  rate_limit?: number | null;
  headers?: Array<{ name: string; value?: string; secret?: boolean }>;
  metadata?: Record<string, string>;
  signature_scheme?: string;
};

/** `metadata[key]=value` in the list's query string. */
const METADATA_FILTER = /^metadata\[([^[\]]+)\]$/;

const listQuerySchema = {
  ...pageQuerySchema,
  properties: {
    ...pageQuerySchema.properties,
    search: { type: 'string', maxLength: 200, description: 'Only endpoints whose URL or description contains this text, ignoring case.' },
  },
  patternProperties: { [METADATA_FILTER.source]: { type: 'string' } },
} as const;

/** The list's filters from its query string: `search` and any number of `metadata[key]=value`. */
function listFilter(query: Record<string, unknown>): EndpointFilter {
  const pairs: Array<[string, string]> = [];
  for (const [k, v] of Object.entries(query)) {
    const key = METADATA_FILTER.exec(k)?.[1];
    if (key !== undefined) pairs.push([key, String(v)]);
  }
  // fromEntries, not assignment: a key such as __proto__ stays a key.
  return { search: typeof query.search === 'string' ? query.search : undefined, metadata: Object.fromEntries(pairs) };
}

/**
 * Checks rate_limit before the schema does, so that a wrong value gets one
 * message that says what is accepted instead of the schema's terse ones.
 */
async function rateLimitFirst(req: { body: unknown }): Promise<void> {
  const body = req.body;
  if (body && typeof body === 'object' && !Array.isArray(body)) {
    endpoints.checkRateLimit((body as { rate_limit?: unknown }).rate_limit);
    endpoints.checkScheme((body as { signature_scheme?: unknown }).signature_scheme);
  }
}

/** The same for a rotation's overlap_seconds; no body at all is a rotation without overlap. */
async function overlapFirst(req: { body: unknown }): Promise<void> {
  await bodyOptional(req);
  const body = req.body;
  if (body && typeof body === 'object' && !Array.isArray(body)) endpoints.checkOverlap((body as { overlap_seconds?: unknown }).overlap_seconds);
}

const tags = ['Endpoints'];

export function endpointRoutes(app: FastifyInstance, deps: RouteDeps): void {
  /** Endpoints with their newest attempt, in one extra query for a whole page. */
  const withLastAttempt = async (rows: EndpointRow[]) => {
    const last = await lastAttempts(deps.db, rows.map((r) => r.id));
    const ctx = { disableAfter: deps.disableAfter, retention: deps.retention ?? DEFAULT_RETENTION, now: deps.clock() };
    return rows.map((r) => endpointJson(r, ctx, last.get(r.id) ?? null));
  };
  const one = async (row: EndpointRow) => (await withLastAttempt([row]))[0]!;

  app.post<{ Body: EndpointBody }>(
    '/v1/endpoints',
    {
      preValidation: rateLimitFirst,
      schema: {
        tags,
        operationId: 'createEndpoint',
        summary: 'Create an endpoint',
        description: 'Saves an https address and the event types it receives. The response carries the signing secret: it is shown this once.',
        body: { type: 'object', additionalProperties: false, required: ['url', 'event_types'], properties: endpointFields },
        response: { 201: ok('EndpointWithSecret', 'Created; the signing secret is in this response only.'), ...problems(400, 401, 409, 413, 415, 422, 429) },
      },
    },
    async (req, reply) => {
      const { endpoint, secret } = await endpoints.createEndpoint(deps, req.accountId, req.body);
      // The only response that ever carries the secret.
      return reply.code(201).header('cache-control', 'no-store').send({ ...(await one(endpoint)), secret });
    },
  );

  app.get<{ Querystring: { limit?: string; cursor?: string; search?: string } & Record<string, unknown> }>(
    '/v1/endpoints',
    {
      schema: {
        tags,
        operationId: 'listEndpoints',
        summary: 'List endpoints',
        description:
          'Oldest first, each with its state, failure streak and newest attempt. Narrow the list with search (URL or description, ignoring case) and metadata[key]=value (exact; give several to require them all), e.g. ?search=acme&metadata[team]=billing. The cursor of a filtered page continues the same filtered list: pass the same filters with it.',
        querystring: listQuerySchema,
        response: { 200: ok(pageOfSchema('Endpoint'), 'A page of endpoints.'), ...problems(400, 401, 429) },
      },
    },
    async (req) => {
      const page = parsePage(req.query);
      const rows = await listEndpoints(deps.db, req.accountId, { limit: page.limit + 1, after: page.after }, listFilter(req.query));
      if (!rows) throw staleCursor();
      const { items, next_cursor } = pageOf(rows, page.limit);
      return { data: await withLastAttempt(items), next_cursor };
    },
  );

  app.get<{ Params: { id: string } }>(
    '/v1/endpoints/:id',
    {
      schema: { tags, operationId: 'getEndpoint', summary: 'Get an endpoint', params: idParams, response: { 200: ok('Endpoint', 'The endpoint.'), ...problems(400, 401, 404, 429) } },
    },
    async (req) => one(await endpoints.getEndpoint(deps, req.accountId, req.params.id)),
  );

  app.patch<{ Params: { id: string }; Body: EndpointBody }>(
    '/v1/endpoints/:id',
    {
      preValidation: rateLimitFirst,
      schema: {
        tags,
        operationId: 'updateEndpoint',
        summary: 'Update an endpoint',
        description:
          'Changes the address (validated again), the subscribed event types, the description, the rate limit (null removes it), the custom headers or the metadata (each replaced whole), or the signature scheme. Fields left out stay as they are. A change of signature scheme replaces the signing secret with a new one of that scheme\u2019s form, which this response carries, this once, as secret; the receiver needs it before it can verify the next request.',
        params: idParams,
        body: { type: 'object', additionalProperties: false, properties: endpointFields },
        response: {
          200: ok('EndpointUpdated', 'The endpoint as updated, with its new signing secret when the signature scheme changed.'),
          ...problems(400, 401, 404, 409, 413, 415, 422, 429),
        },
      },
    },
    async (req, reply) => {
      const { endpoint, secret } = await endpoints.updateEndpoint(deps, req.accountId, req.params.id, req.body);
      if (secret === undefined) return one(endpoint);
      return reply.header('cache-control', 'no-store').send({ ...(await one(endpoint)), secret });
    },
  );

  app.delete<{ Params: { id: string } }>(
    '/v1/endpoints/:id',
    {
      schema: {
        tags,
        operationId: 'deleteEndpoint',
        summary: 'Delete an endpoint',
        description: 'Deletes the endpoint with its deliveries and attempt log. Events stay.',
        params: idParams,
        response: { 204: { type: 'null', description: 'Deleted.' }, ...problems(400, 401, 404, 429) },
      },
    },
    async (req, reply) => {
      await endpoints.deleteEndpoint(deps, req.accountId, req.params.id);
      return reply.code(204).send();
    },
  );

  app.post<{ Params: { id: string }; Body: { overlap_seconds?: number } | undefined }>(
    '/v1/endpoints/:id/rotate-secret',
    {
      preValidation: overlapFirst,
      schema: {
        tags,
        operationId: 'rotateEndpointSecret',
        summary: 'Generate a new signing secret',
        description:
          'Replaces the signing secret with a new one of the endpoint\u2019s scheme, which signs the very next attempt, retries of older events included. The response carries the new secret, shown this once. With no body, or overlap_seconds 0, the old secret is discarded at once. With overlap_seconds, the old secret stays valid that long: every request carries two signatures, space-separated, the new one first (X-Service-Signature: v1=<new> v1=<old>; webhook-signature: v1,<new> v1,<old>), until the overlap ends or is ended with DELETE /v1/endpoints/{id}/previous-secret. A receiver that reads the signature header as one single value must rotate without overlap. Rotating again during an overlap keeps only the secret it replaces.',
        params: idParams,
        body: {
          type: 'object',
          additionalProperties: false,
          properties: {
            overlap_seconds: {
              type: 'integer',
              minimum: 0,
              maximum: endpoints.OVERLAP_MAX_SECONDS,
              default: 0,
              description: 'How long the old secret keeps signing next to the new one, in seconds: 0 (the default) to 604800 (7 days).',
              examples: [86400],
            },
          },
        },
        response: { 200: ok('EndpointWithSecret', 'The endpoint with its new signing secret, in this response only.'), ...problems(400, 401, 404, 409, 413, 415, 422, 429) },
      },
    },
    async (req, reply) => {
      const { endpoint, secret } = await endpoints.rotateSecret(deps, req.accountId, req.params.id, req.body ?? {});
      return reply.header('cache-control', 'no-store').send({ ...(await one(endpoint)), secret });
    },
  );

  app.delete<{ Params: { id: string } }>(
    '/v1/endpoints/:id/previous-secret',
    {
      schema: {
        tags,
        operationId: 'endSecretOverlap',
        summary: 'End a rotation\u2019s overlap now',
        description:
          'Erases the secret a rotation with overlap_seconds kept valid: from the next attempt on, only the current secret signs. Ending an overlap that is not running changes nothing.',
        params: idParams,
        response: { 200: ok('Endpoint', 'The endpoint, signing with its current secret only.'), ...problems(400, 401, 404, 429) },
      },
    },
    async (req) => one(await endpoints.endSecretOverlap(deps, req.accountId, req.params.id)),
  );

  app.post<{ Params: { id: string }; Body: { event_type?: string } | undefined }>(
    '/v1/endpoints/:id/test',
    {
      preValidation: bodyOptional,
      schema: {
        tags,
        operationId: 'sendTestEvent',
        summary: 'Send a test event',
        description: `Sends one signed test request now and answers with its outcome, within the 10 s deadline. By default the event is "${TEST_EVENT_TYPE}" (receivers ignore unknown types); name a published type to send its example record instead. A test is never retried, is marked as a test in the attempt log, does not count toward disabling, and works on a disabled endpoint, to check a fix before re-enabling.`,
        params: idParams,
        body: {
          type: 'object',
          additionalProperties: false,
          properties: { event_type: { type: 'string', description: `Defaults to ${TEST_EVENT_TYPE}.`, examples: ['alarm.created'] } },
        },
        response: { 200: ok('AttemptDetail', 'The test attempt: status code or error, duration, and the request sent.'), ...problems(400, 401, 404, 409, 413, 415, 422, 429) },
      },
    },
    async (req) => {
      const attempt = await sendTestEvent(deps, deps.outbound, req.accountId, req.params.id, req.body ?? {});
      return attemptRecordJson(attempt);
    },
  );

  app.post<{ Params: { id: string } }>(
    '/v1/endpoints/:id/enable',
    {
      schema: {
        tags,
        operationId: 'enableEndpoint',
        summary: 'Re-enable an endpoint',
        description: 'Enables the endpoint and resets its failure streak. Deliveries skipped while it was disabled stay skipped: send them with recover.',
        params: idParams,
        response: { 200: ok('Endpoint', 'The endpoint, enabled.'), ...problems(400, 401, 404, 409, 413, 415, 422, 429) },
      },
    },
    async (req) => one(await enableEndpoint(deps, req.accountId, req.params.id)),
  );

  app.post<{ Params: { id: string }; Body: { reason?: string } | undefined }>(
    '/v1/endpoints/:id/disable',
    {
      preValidation: bodyOptional,
      schema: {
        tags,
        operationId: 'disableEndpoint',
        summary: 'Disable an endpoint by hand',
        description:
          'Nothing is sent to it any more; its pending deliveries and new events become skipped, kept for recovery. The endpoint records who disabled it (disabled_by: the panel user or the API key of this request) and the reason, "disabled by hand" when none is given. Disabling a disabled endpoint changes nothing.',
        params: idParams,
        body: { type: 'object', additionalProperties: false, properties: { reason: { type: 'string', maxLength: 500 } } },
        response: { 200: ok('Endpoint', 'The endpoint, disabled.'), ...problems(400, 401, 404, 409, 413, 415, 422, 429) },
      },
    },
    async (req) => {
      const p = req.principal!;
      const actor: Actor =
        p.kind === 'session' ? { kind: 'user', userId: p.userId } : p.kind === 'portal' ? { kind: 'portal', portalSessionId: p.portalSessionId } : { kind: 'api_key', keyId: p.keyId };
      return one(await disableEndpoint(deps, req.accountId, req.params.id, req.body?.reason, actor));
    },
  );

  app.post<{ Params: { id: string }; Body: { since: string; dry_run?: boolean } }>(
    '/v1/endpoints/:id/recover',
    {
      schema: {
        tags,
        operationId: 'recoverEndpoint',
        summary: 'Recover skipped and failed deliveries',
        description:
          'Sends again, each with a fresh set of attempts, the deliveries of this endpoint created since a time that ended failed or skipped. With dry_run it only counts them, to show before confirming. The endpoint must be enabled. Failed and skipped deliveries are kept for retention.undelivered_days (HERALD_RETENTION_UNDELIVERED_DAYS, 90 by default): a time further back is refused (beyond_retention), naming the earliest time accepted.',
        params: idParams,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['since'],
          properties: {
            since: { type: 'string', description: 'A date-time with a zone, e.g. 2026-11-22T09:00:00Z, within retention.undelivered_days of now.' },
            dry_run: { type: 'boolean', default: false },
          },
        },
        response: { 200: ok('RecoverResult', 'How many deliveries were (or would be) sent again.'), ...problems(400, 401, 404, 409, 413, 415, 422, 429) },
      },
    },
    async (req) => {
      const r = await recoverEndpoint(deps, req.accountId, req.params.id, req.body);
      return { since: r.since.toISOString(), dry_run: r.dry_run, count: r.count };
    },
  );
}
