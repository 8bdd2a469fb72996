/**
 * The shapes of Herald's public /v1 API as the panel uses them
 * (docs/api.md and the OpenAPI document, docs/openapi.json).
 * Times are ISO 8601 UTC strings.
 */

export interface User {
  id: string;
  email: string;
  name: string;
}

export interface Account {
  id: string;
  name: string;
}

/** POST/GET /v1/session and POST /v1/setup. The CSRF token goes with every non-GET request. */
export interface Session {
  user: User;
  account: Account;
  csrf_token: string;
}

export type AttemptOutcome = 'succeeded' | 'retrying' | 'failed';

/** The latest attempt as the endpoint list carries it. */
export interface AttemptSummary {
  id: string;
  started_at: string;
  outcome: AttemptOutcome;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
  is_test: boolean;
  delivery_state?: DeliveryState | null;
}

export interface Endpoint {
  id: string;
  url: string;
  description: string;
  event_types: string[];
  state: 'enabled' | 'disabled';
  disabled_reason: string | null;
  disabled_at: string | null;
  /** Who disabled it (null while enabled): Herald by itself, a panel user, an API key, or someone by hand before Herald recorded who. */
  disabled_by: { type: 'automatic' | 'user' | 'api_key' | 'portal' | 'manual'; id: string | null; name: string | null } | null;
  failure_streak: number;
  failure_threshold: number;
  /** The most requests per second Herald sends to it; null: no limit. */
  rate_limit: number | null;
  /**
   * The automatic slow-down after the receiver answered 429 or 503, or null:
   * no new request before `until` (null once passed), at most `max_in_flight`
   * at a time until it answers 2xx again.
   */
  throttle: { until: string | null; max_in_flight: number | null } | null;
  /** How long Herald keeps deliveries: succeeded ones, and failed or skipped ones (how far back recovery reaches). */
  retention: { succeeded_days: number; undelivered_days: number };
  /** The start of the signing secret, e.g. "whsec_B8vG…"; the secret itself is shown once. */
  secret_hint: string;
  /** Custom headers sent with every request; a secret one shows only `value_hint`. */
  headers: EndpointHeader[];
  /** The owner's own labels. */
  metadata: Record<string, string>;
  /** How requests are signed: Herald's X-Service-* headers, or the Standard Webhooks headers. */
  signature_scheme: SignatureScheme;
  /** While a rotation's overlap runs: until when the replaced secret still signs, next to the new one; null otherwise. */
  previous_secret_expires_at: string | null;
  created_at: string;
  updated_at: string;
  last_attempt?: AttemptSummary | null;
}

export interface EndpointHeader {
  name: string;
  secret: boolean;
  /** Null when secret. */
  value: string | null;
  /** A secret value, masked; null when not secret. */
  value_hint: string | null;
}

/** A custom header as sent on create or update: a secret one without a value keeps the value it has. */
export interface EndpointHeaderInput {
  name: string;
  value?: string;
  secret: boolean;
}

export type SignatureScheme = 'herald' | 'standard-webhooks';

/** The answers of create and rotate-secret (and of an update that changed the scheme): the only ones that carry the secret. */
export interface EndpointWithSecret extends Endpoint {
  secret: string;
}

export interface EndpointInput {
  url: string;
  event_types: string[];
  description?: string;
  /** Requests per second; null removes the limit. */
  rate_limit?: number | null;
  /** Replaces the whole list. */
  headers?: EndpointHeaderInput[];
  /** Replaces the whole object. */
  metadata?: Record<string, string>;
  /** On an update, a different scheme comes with a new secret, in the answer. */
  signature_scheme?: SignatureScheme;
}

/** One HTTP request Herald sent (its id is the X-Service-Delivery-ID). */
export interface Attempt {
  id: string;
  endpoint_id: string;
  delivery_id: string | null;
  event_id: string;
  event_type: string;
  attempt_number: number;
  is_test: boolean;
  started_at: string;
  duration_ms: number;
  status_code: number | null;
  outcome: AttemptOutcome;
  error: string | null;
  response_excerpt: string | null;
  /** The delivery's state now (null for a test): what became of a retrying attempt. */
  delivery_state?: DeliveryState | null;
}

export type DeliveryState = 'pending' | 'succeeded' | 'failed' | 'skipped';

/** GET /v1/endpoints/:id/attempts/:attempt_id and the answer of a test. */
export interface AttemptDetail extends Attempt {
  request: { url?: string; headers: Record<string, string>; body: string };
}

export interface EventType {
  name: string;
  description: string;
  builtin: boolean;
  schema: unknown;
  example: unknown;
}

export interface Page<T> {
  data: T[];
  next_cursor: string | null;
}

export interface RecoverResult {
  since: string;
  dry_run: boolean;
  count: number;
}

/** RFC 9457 problem details with Herald's stable `code`. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  code: string;
  detail: string;
  errors?: Array<{ field: string; message: string }>;
}

/** GET/POST /v1/api-keys: a key as listed; the key itself only in the answer that creates it. */
export interface ApiKey {
  id: string;
  name: string;
  prefix: string;
  created_at: string;
  revoked_at: string | null;
}

export interface ApiKeyWithKey extends ApiKey {
  key: string;
}

export type StatsWindow = '1h' | '24h' | '7d';

type StateCounts = Record<DeliveryState, number>;

/** GET /v1/endpoints/:id/stats: deliveries (each once) and request latency over a window. */
export interface EndpointStats {
  window: StatsWindow;
  from: string;
  to: string;
  deliveries: StateCounts & { total: number };
  success_rate: number | null;
  capped: boolean;
  buckets: Array<StateCounts & { start: string }>;
  latency: { requests: number; p50_ms: number | null; p95_ms: number | null; p99_ms: number | null; max_ms: number | null };
}
