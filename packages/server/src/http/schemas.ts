/**
 * The shapes the API sends, as JSON Schemas registered once with fastify
 * (`addSchema`). The same objects serialise responses, document them in the
 * OpenAPI document (components/schemas, named by `$id`) and check them in the
 * tests, so the document cannot drift from what the server sends.
 */

const uuid = { type: 'string', format: 'uuid' } as const;
const time = { type: 'string', format: 'date-time' } as const;
const nullable = <T extends object>(schema: T) => ({ anyOf: [schema, { type: 'null' }] }) as const;
const ref = (id: string) => ({ $ref: `${id}#` }) as const;

const problem = {
  $id: 'Problem',
  type: 'object',
  description: 'An RFC 9457 problem. `code` is stable: branch on it, not on the wording of `detail`.',
  required: ['type', 'title', 'status', 'code', 'detail'],
  properties: {
    type: { type: 'string', description: 'A URI naming the problem type.' },
    title: { type: 'string' },
    status: { type: 'integer' },
    code: { type: 'string', description: 'Stable machine-readable code, e.g. validation_failed.' },
    detail: { type: 'string', description: 'What went wrong and what to do about it.' },
    errors: {
      type: 'array',
      description: 'For validation problems: each invalid field and what is wrong with it.',
      items: { type: 'object', required: ['field', 'message'], properties: { field: { type: 'string' }, message: { type: 'string' } } },
    },
    limit: {
      type: 'object',
      description: 'For limit_exceeded and beyond_retention: the operator\u2019s setting that holds the limit, and its value.',
      required: ['setting', 'value'],
      properties: { setting: { type: 'string', examples: ['HERALD_MAX_ENDPOINTS_PER_ACCOUNT'] }, value: { type: 'integer' } },
    },
    reason: {
      type: 'string',
      enum: ['unreachable', 'timeout', 'read_only', 'schema_outdated', 'schema_too_new'],
      description: 'For database_unavailable: what is wrong with the database.',
    },
  },
} as const;

const attemptProperties = {
  id: { ...uuid, description: 'The X-Service-Delivery-ID header sent with this attempt.' },
  endpoint_id: uuid,
  delivery_id: { ...nullable(uuid), description: 'The delivery this attempt belongs to; null for a test.' },
  event_id: uuid,
  event_type: { type: 'string' },
  attempt_number: { type: 'integer', minimum: 1, description: '1 for the first attempt of a delivery, up to 7.' },
  is_test: { type: 'boolean', description: 'A test sent from the panel or API: never retried, not counted toward disabling.' },
  started_at: time,
  duration_ms: { type: 'integer', minimum: 0 },
  status_code: { ...nullable({ type: 'integer' }), description: 'The receiver\u2019s status code; null when it never answered.' },
  outcome: {
    type: 'string',
    enum: ['succeeded', 'retrying', 'failed'],
    description: 'What became of the delivery after this attempt: succeeded, retrying (another attempt is scheduled) or failed.',
  },
  error: { ...nullable({ type: 'string' }), description: 'What went wrong, in words: "HTTP 503", "timed out after 10 s", "connection refused".' },
  response_excerpt: { ...nullable({ type: 'string' }), description: 'The first 4 KiB of the response body, as UTF-8.' },
  delivery_state: {
    ...nullable({ type: 'string', enum: ['pending', 'succeeded', 'failed', 'skipped'] }),
    description:
      'The state of its delivery now, which tells what became of a retrying attempt: pending (the retry is still to come), succeeded or failed (a later attempt settled it), skipped (the endpoint was disabled before the retry; recover sends it again). Null for a test, or once the delivery is no longer kept.',
  },
} as const;
const attemptRequired = Object.keys(attemptProperties);

const attempt = {
  $id: 'Attempt',
  type: 'object',
  description: 'One HTTP request to an endpoint.',
  required: attemptRequired,
  properties: attemptProperties,
} as const;

const attemptDetail = {
  $id: 'AttemptDetail',
  type: 'object',
  description: 'An attempt with the request exactly as it was sent.',
  required: [...attemptRequired, 'request'],
  properties: {
    ...attemptProperties,
    request: {
      type: 'object',
      required: ['url', 'headers', 'body'],
      properties: {
        url: { type: 'string', description: 'The address it was sent to (the endpoint\u2019s current address for older attempts).' },
        headers: { type: 'object', additionalProperties: { type: 'string' } },
        body: { ...nullable({ type: 'string' }), description: 'The body sent; null when the event is no longer stored.' },
      },
    },
  },
} as const;

const endpointProperties = {
  id: uuid,
  url: { type: 'string', description: 'The https address that receives events.' },
  description: { type: 'string' },
  event_types: { type: 'array', items: { type: 'string' }, description: 'The event types this endpoint receives, sorted by name, each once.' },
  state: { type: 'string', enum: ['enabled', 'disabled'] },
  disabled_reason: { ...nullable({ type: 'string' }), description: 'Why it was disabled.' },
  disabled_at: nullable(time),
  disabled_by: {
    ...nullable({
      type: 'object',
      required: ['type', 'id', 'name'],
      properties: {
        type: {
          type: 'string',
          enum: ['automatic', 'user', 'api_key', 'portal', 'manual'],
          description:
            'automatic: Herald, after failure_threshold consecutive failed deliveries; user: a panel user; api_key: a request with an API key; portal: someone in a panel embedded with a portal session; manual: by hand, before Herald recorded who.',
        },
        id: { ...nullable(uuid), description: 'The user or API key, for user and api_key; the portal session, for portal.' },
        name: { ...nullable({ type: 'string' }), description: 'The user\u2019s name (or email), or the key\u2019s name and prefix, at the time.' },
      },
    }),
    description: 'Who disabled it; null while enabled.',
  },
  failure_streak: { type: 'integer', minimum: 0, description: 'Consecutive failed deliveries; the endpoint is disabled when it reaches failure_threshold.' },
  failure_threshold: { type: 'integer', description: 'Consecutive failed deliveries that disable the endpoint (20).' },
  rate_limit: {
    ...nullable({ type: 'integer', minimum: 1, maximum: 10_000 }),
    description: 'The most requests per second Herald sends to this endpoint (bursts of up to one second\u2019s worth); null: no limit but the in-flight caps.',
  },
  throttle: {
    ...nullable({
      type: 'object',
      required: ['until', 'max_in_flight'],
      properties: {
        until: { ...nullable(time), description: 'No new request starts before this time; null once it has passed.' },
        max_in_flight: {
          ...nullable({ type: 'integer', minimum: 1 }),
          description: 'At most this many requests at a time, raised by one with each success until the usual cap is back.',
        },
      },
    }),
    description:
      'The automatic slow-down, as it is now: after the receiver answered 429 or 503, Herald waits (its Retry-After, clamped to 1 s to 1 h, or 5 s) and halves the requests it sends at once. Null when the endpoint is not slowed down.',
  },
  retention: {
    type: 'object',
    description: 'How long Herald keeps this endpoint\u2019s deliveries (with their events and attempts), set by the operator for every endpoint.',
    required: ['succeeded_days', 'undelivered_days'],
    properties: {
      succeeded_days: { type: 'integer', minimum: 1, description: 'Succeeded deliveries are kept this many days (HERALD_RETENTION_DAYS).' },
      undelivered_days: {
        type: 'integer',
        minimum: 1,
        description: 'Failed and skipped deliveries are kept this many days (HERALD_RETENTION_UNDELIVERED_DAYS): recovery reaches this far back.',
      },
    },
  },
  secret_hint: { type: 'string', description: 'The signing secret, masked. The secret itself is shown once.' },
  headers: {
    type: 'array',
    description: 'Custom headers sent with every request to this endpoint, in order. A secret value is never shown: value is null and value_hint masks it.',
    items: {
      type: 'object',
      required: ['name', 'secret', 'value', 'value_hint'],
      properties: {
        name: { type: 'string', examples: ['X-Api-Key'] },
        secret: { type: 'boolean' },
        value: { ...nullable({ type: 'string' }), description: 'The value; null when it is secret.' },
        value_hint: { ...nullable({ type: 'string' }), description: 'A secret value, masked (its first four characters when it has 16 or more); null when it is not secret.' },
      },
    },
  },
  metadata: {
    type: 'object',
    additionalProperties: { type: 'string' },
    description: 'The owner\u2019s own labels: string keys to string values, as set.',
    examples: [{ team: 'billing' }],
  },
  signature_scheme: {
    type: 'string',
    enum: ['herald', 'standard-webhooks'],
    description:
      'How requests are signed: herald (X-Service-Timestamp and X-Service-Signature) or standard-webhooks (webhook-id, webhook-timestamp and webhook-signature, as the Standard Webhooks specification defines them).',
  },
  previous_secret_expires_at: {
    ...nullable(time),
    description:
      'While a rotation\u2019s overlap runs: the time until which the replaced secret still signs every request, next to the new one. Null when no overlap runs. The secret itself never appears.',
  },
  created_at: time,
  updated_at: time,
  last_attempt: { ...nullable(ref('Attempt')), description: 'The newest attempt in the log, or null.' },
} as const;
const endpointRequired = Object.keys(endpointProperties);

const endpoint = { $id: 'Endpoint', type: 'object', required: endpointRequired, properties: endpointProperties } as const;
const endpointWithSecret = {
  $id: 'EndpointWithSecret',
  type: 'object',
  description: 'An endpoint and its signing secret, shown this once. Store it in a secret vault.',
  required: [...endpointRequired, 'secret'],
  properties: {
    ...endpointProperties,
    secret: {
      type: 'string',
      description:
        'whsec_…: for the herald scheme the HMAC key is its UTF-8 bytes; for standard-webhooks, the bytes its base64 part after whsec_ encodes.',
    },
  },
} as const;
const endpointUpdated = {
  $id: 'EndpointUpdated',
  type: 'object',
  description: 'The endpoint as updated. When the update changed the signature scheme, it carries the new signing secret, shown this once.',
  required: endpointRequired,
  properties: { ...endpointProperties, secret: { type: 'string', description: 'Only when the signature scheme changed: the new secret, of that scheme\u2019s form.' } },
} as const;

const deliveryProperties = {
  id: uuid,
  event_id: uuid,
  endpoint_id: uuid,
  state: {
    type: 'string',
    enum: ['pending', 'succeeded', 'failed', 'skipped'],
    description: 'pending (queued or waiting for a retry), succeeded, failed, or skipped (the endpoint was disabled).',
  },
  attempts: { type: 'integer', description: 'Attempts made so far in this round (a recovery or redelivery starts a new round).' },
  next_attempt_at: { ...nullable(time), description: 'When the next attempt is due, while pending.' },
  last_status: nullable({ type: 'integer' }),
  last_error: nullable({ type: 'string' }),
  created_at: time,
  updated_at: time,
} as const;
const delivery = { $id: 'Delivery', type: 'object', required: Object.keys(deliveryProperties), properties: deliveryProperties } as const;

const eventProperties = {
  id: uuid,
  type: { type: 'string' },
  created_at: time,
  payload: { description: 'The envelope exactly as receivers get it: {id, type, created_at, data}.' },
} as const;
const event = { $id: 'Event', type: 'object', required: Object.keys(eventProperties), properties: eventProperties } as const;
const eventDetail = {
  $id: 'EventDetail',
  type: 'object',
  required: [...Object.keys(eventProperties), 'deliveries'],
  properties: {
    ...eventProperties,
    deliveries: {
      type: 'array',
      items: {
        type: 'object',
        required: [...Object.keys(deliveryProperties), 'attempt_log'],
        properties: {
          ...deliveryProperties,
          attempt_log: {
            type: 'array',
            items: ref('Attempt'),
            description: 'Its attempts still in the log (which keeps 100 per endpoint), oldest first: the story of this delivery, every round included.',
          },
        },
      },
    },
  },
} as const;

const publishedEvent = {
  $id: 'PublishedEvent',
  type: 'object',
  required: ['id', 'type', 'created_at', 'duplicate'],
  properties: {
    id: uuid,
    type: { type: 'string' },
    created_at: time,
    duplicate: { type: 'boolean', description: 'True when this id was published before with the same body: nothing new was created.' },
  },
} as const;

const eventType = {
  $id: 'EventType',
  type: 'object',
  required: ['name', 'description', 'builtin', 'schema', 'example'],
  properties: {
    name: { type: 'string', examples: ['alarm.created'] },
    description: { type: 'string' },
    builtin: { type: 'boolean' },
    // additionalProperties: without it the serialiser would send an empty object.
    schema: { type: 'object', additionalProperties: true, description: 'The JSON Schema (2020-12) that the data of such events must match.' },
    example: { description: 'An example data record; a test event of this type sends it.' },
  },
} as const;

const apiKeyProperties = {
  id: uuid,
  name: { type: 'string' },
  prefix: { type: 'string', description: 'The visible start of the key, to tell keys apart.' },
  created_at: time,
  revoked_at: nullable(time),
} as const;
const apiKey = { $id: 'ApiKey', type: 'object', required: Object.keys(apiKeyProperties), properties: apiKeyProperties } as const;
const apiKeyWithKey = {
  $id: 'ApiKeyWithKey',
  type: 'object',
  description: 'A new API key, shown this once.',
  required: [...Object.keys(apiKeyProperties), 'key'],
  properties: { ...apiKeyProperties, key: { type: 'string', description: 'hk_…: send it as "Authorization: Bearer <key>".' } },
} as const;

const recoverResult = {
  $id: 'RecoverResult',
  type: 'object',
  required: ['since', 'dry_run', 'count'],
  properties: {
    since: time,
    dry_run: { type: 'boolean' },
    count: { type: 'integer', description: 'Deliveries sent again (or, in a dry run, that would be).' },
  },
} as const;

const eventCount = {
  $id: 'EventCount',
  type: 'object',
  required: ['count', 'capped'],
  properties: {
    count: { type: 'integer', minimum: 0, description: 'Events that match, counted up to 10,000.' },
    capped: { type: 'boolean', description: 'True when more than `count` match: show it as "more than 10,000".' },
  },
} as const;

const replayFilter = {
  type: 'object',
  description: 'What the replay selects, as stored: a search\u2019s filter, or event ids. `until` is never later than the replay\u2019s creation.',
  properties: {
    ids: { type: 'array', items: uuid },
    types: { type: 'array', items: { type: 'string' } },
    since: time,
    until: time,
    endpoint_id: uuid,
    states: { type: 'array', items: { type: 'string', enum: ['pending', 'succeeded', 'failed', 'skipped'] } },
  },
} as const;

const replay = {
  $id: 'Replay',
  type: 'object',
  description: 'Past events sent again as new deliveries, in the background, and the record of who asked for it and when.',
  required: ['id', 'state', 'filter', 'endpoint_id', 'total', 'done', 'deliveries', 'skipped', 'created_by', 'created_at', 'updated_at', 'finished_at'],
  properties: {
    id: uuid,
    state: { type: 'string', enum: ['running', 'completed', 'canceled'] },
    filter: replayFilter,
    endpoint_id: { ...nullable(uuid), description: 'The one endpoint it sends to; null: every endpoint subscribed to each event\u2019s type.' },
    total: { type: 'integer', description: 'Events selected when it was created.' },
    done: { type: 'integer', description: 'Events it has gone through so far. It can end below total when events are deleted by retention, or no longer match the state filter, before their turn.' },
    deliveries: { type: 'integer', description: 'New deliveries created (one per event and endpoint).' },
    skipped: {
      type: 'object',
      required: ['disabled', 'unsubscribed'],
      properties: {
        disabled: { type: 'integer', description: 'Event–endpoint pairs not sent because the endpoint was disabled when their batch ran.' },
        unsubscribed: { type: 'integer', description: 'For a replay to one endpoint: events of a type the endpoint does not subscribe to.' },
      },
    },
    created_by: {
      type: 'object',
      required: ['type', 'id', 'name'],
      properties: {
        type: { type: 'string', enum: ['api_key', 'user'], description: 'An API key, or a person signed in to the panel.' },
        id: nullable(uuid),
        name: { ...nullable({ type: 'string' }), description: 'The key\u2019s or the person\u2019s name; null once deleted.' },
      },
    },
    created_at: time,
    updated_at: time,
    finished_at: nullable(time),
  },
} as const;

const replayPreview = {
  $id: 'ReplayPreview',
  type: 'object',
  description: 'What a replay would send (dry_run): nothing was created.',
  required: ['dry_run', 'count', 'endpoint_id', 'endpoints'],
  properties: {
    dry_run: { type: 'boolean', enum: [true] },
    count: { type: 'integer', description: 'Events selected.' },
    endpoint_id: nullable(uuid),
    endpoints: { type: 'integer', description: 'Enabled endpoints it would send to now (each event goes to those of them subscribed to its type).' },
  },
} as const;

const user = {
  $id: 'User',
  type: 'object',
  description: 'A person who signs in to the panel.',
  required: ['id', 'email', 'name'],
  properties: { id: uuid, email: { type: 'string' }, name: { type: 'string' } },
} as const;

const session = {
  $id: 'Session',
  type: 'object',
  description: 'The signed-in user of the panel, their account, and the token to send as X-CSRF-Token with every request that changes something.',
  required: ['user', 'account', 'csrf_token'],
  properties: {
    user: ref('User'),
    account: { type: 'object', required: ['id', 'name'], properties: { id: uuid, name: { type: 'string' } } },
    csrf_token: { type: 'string' },
    expires_at: { ...time, description: 'When the session ends at the latest; it ends sooner when unused for the idle timeout.' },
  },
} as const;

/** Every shared schema, in registration order (references point backwards). */
export const SHARED_SCHEMAS = [
  problem,
  attempt,
  attemptDetail,
  endpoint,
  endpointWithSecret,
  endpointUpdated,
  delivery,
  event,
  eventDetail,
  publishedEvent,
  eventType,
  apiKey,
  apiKeyWithKey,
  recoverResult,
  eventCount,
  replay,
  replayPreview,
  user,
  session,
] as const;

export { ref };

/** `{ data: [...], next_cursor }`, the shape of every list. */
export function pageOfSchema(item: string) {
  return {
    type: 'object',
    required: ['data', 'next_cursor'],
    properties: {
      data: { type: 'array', items: ref(item) },
      next_cursor: { ...nullable({ type: 'string' }), description: 'Pass as ?cursor= for the next page; null on the last page.' },
    },
  } as const;
}

/** A success response: its schema (or a shared schema's name) and what it means. */
export function ok(schema: string | object, description: string) {
  return { description, content: { 'application/json': { schema: typeof schema === 'string' ? ref(schema) : schema } } };
}

/** The problem responses a route can give, for its documentation. */
export function problems(...statuses: number[]): Record<string, unknown> {
  const descriptions: Record<number, string> = {
    400: 'The request is not valid; `errors` names each field.',
    401: 'Missing, invalid or revoked API key (or no panel session).',
    403: 'Refused: a panel session’s request without its CSRF token or from another origin (`csrf_failed`), or an embedded panel’s request it may not make (`read_only_session`, `not_in_portal`).',
    404: 'No such object in this account.',
    409: 'The request conflicts with the object\u2019s state, or a request with the same Idempotency-Key is still running.',
    413: 'The body is too large.',
    415: 'The body is not JSON.',
    422: 'The Idempotency-Key was used for another request, or the request would pass one of the operator\u2019s limits (`limit_exceeded`, naming the setting in `limit`).',
    429: 'Rate limit exceeded; wait for Retry-After seconds.',
    503: 'Herald is shutting down (`shutting_down`: send the request again), busy checking too many passwords at once (`busy`), or cannot use its database (`database_unavailable`: unreachable, too slow or read-only); try again after Retry-After seconds.',
  };
  return Object.fromEntries(
    statuses.map((s) => [s, { description: descriptions[s] ?? 'Error', content: { 'application/problem+json': { schema: ref('Problem') } } }]),
  );
}

/**
 * For routes whose body is optional (`POST /v1/endpoints/{id}/test` with no
 * options): a request without a body is validated as `{}`.
 */
export async function bodyOptional(req: { body: unknown }): Promise<void> {
  if (req.body === undefined || req.body === null) req.body = {};
}
