/**
 * Every error Herald reports, in one table: a stable code, the HTTP status and
 * a title. The message of each instance says what to fix. The API renders them
 * as RFC 9457 `application/problem+json`.
 */
export const ERRORS = {
  validation_failed: { status: 400, title: 'The request is not valid' },
  malformed_json: { status: 400, title: 'The request body is not valid JSON' },
  invalid_url: { status: 400, title: 'The endpoint address is not a valid https URL' },
  unknown_event_type: { status: 400, title: 'The event type is not in the catalog' },
  invalid_event_data: { status: 400, title: 'The event data does not match its type' },
  beyond_retention: { status: 400, title: 'The time is further back than Herald keeps deliveries' },
  unauthorized: { status: 401, title: 'Missing or invalid credentials' },
  invalid_credentials: { status: 401, title: 'Sign-in failed' },
  csrf_failed: { status: 403, title: 'The request did not come from the panel' },
  setup_token_required: { status: 403, title: 'First-run setup needs the setup link Herald printed' },
  setup_token_invalid: { status: 403, title: 'The setup token is not the one Herald printed' },
  api_key_required: { status: 403, title: 'Only an API key can do this' },
  account_mismatch: { status: 403, title: 'The API key belongs to another account' },
  read_only_session: { status: 403, title: 'The portal session is read-only' },
  not_in_portal: { status: 403, title: 'A portal session cannot use this route' },
  not_found: { status: 404, title: 'Not found' },
  route_not_found: { status: 404, title: 'No such route' },
  method_not_allowed: { status: 405, title: 'Method not allowed' },
  request_timeout: { status: 408, title: 'The request took too long to arrive' },
  event_id_conflict: { status: 409, title: 'The event id was already used with another body' },
  endpoint_disabled: { status: 409, title: 'The endpoint is disabled' },
  not_subscribed: { status: 409, title: 'The endpoint does not subscribe to this event type' },
  idempotency_key_reused: { status: 422, title: 'The Idempotency-Key was used for another request' },
  limit_exceeded: { status: 422, title: 'The request would pass one of the operator\'s limits' },
  nothing_to_replay: { status: 422, title: 'No event matches the replay\'s selection' },
  replay_limit: { status: 409, title: 'Too many replays are running in this account' },
  idempotency_key_in_use: { status: 409, title: 'A request with this Idempotency-Key is still running' },
  email_in_use: { status: 409, title: 'A user with this email already exists' },
  setup_done: { status: 409, title: 'Herald is already set up' },
  conflict: { status: 409, title: 'Conflict' },
  payload_too_large: { status: 413, title: 'The request body is too large' },
  unsupported_media_type: { status: 415, title: 'Unsupported content type' },
  rate_limited: { status: 429, title: 'Too many requests' },
  headers_too_large: { status: 431, title: 'The request headers are too large' },
  internal_error: { status: 500, title: 'Internal error' },
  busy: { status: 503, title: 'Herald is busy' },
  shutting_down: { status: 503, title: 'Herald is shutting down' },
  database_unavailable: { status: 503, title: 'Herald cannot use its database right now' },
} as const;

export type ErrorCode = keyof typeof ERRORS;

/** One invalid field: a JSON pointer-ish path and what is wrong with it. */
export interface FieldError {
  field: string;
  message: string;
}

/** For limit_exceeded and beyond_retention: the setting that holds the limit, and its value. */
export interface LimitInfo {
  setting: string;
  value: number;
}

export class HeraldError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly errors: FieldError[] | undefined;
  readonly limit: LimitInfo | undefined;

  constructor(code: ErrorCode, message: string, options: { errors?: FieldError[]; limit?: LimitInfo; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.name = 'HeraldError';
    this.code = code;
    this.status = ERRORS[code].status;
    this.errors = options.errors;
    this.limit = options.limit;
  }
}

/**
 * Joins the segments of a JSON pointer as a person reads them:
 * `["events", "1", "data", "severity"]` → `events[1].data.severity`.
 */
export function fieldPath(segments: readonly string[]): string {
  return segments
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce((path, s) => (/^\d+$/.test(s) ? `${path}[${s}]` : path ? `${path}.${s}` : s), '');
}

/** Shorthand for a 400 on one field. */
export function invalidField(field: string, message: string, code: ErrorCode = 'validation_failed'): HeraldError {
  return new HeraldError(code, `${field}: ${message}`, { errors: [{ field, message }] });
}

/** Thrown by the config loader; names the setting to fix. */
export class ConfigError extends Error {
  constructor(readonly setting: string, message: string) {
    super(`${setting}: ${message}`);
    this.name = 'ConfigError';
  }
}
