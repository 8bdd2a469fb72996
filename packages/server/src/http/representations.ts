import { headerView } from '../core/custom-headers.ts';
import { loggedHeaders } from '../core/request-headers.ts';
import type { ApiKeyRow } from '../storage/queries/api-keys.ts';
import type { AttemptDetailRow, AttemptRow } from '../storage/queries/attempts.ts';
import type { DeliverySummaryRow } from '../storage/queries/deliveries.ts';
import type { EndpointRow } from '../storage/queries/endpoints.ts';
import type { EventRow } from '../storage/queries/events.ts';
import type { AttemptRecord } from '../storage/queries/record-results.ts';
import type { RetentionConfig } from '../config.ts';

/** What an endpoint's representation shows besides its row: the operator's settings and the time. */
export interface EndpointContext {
  /** Consecutive failed deliveries before disabling. */
  disableAfter: number;
  retention: RetentionConfig;
  /** Now, to tell whether a slow-down is still running. */
  now: Date;
}

/**
 * The automatic slow-down as it is now, or null when the endpoint is not
 * slowed down: no new request before `until` (null once that has passed),
 * and at most `max_in_flight` requests at a time until it answers 2xx again.
 */
function throttleJson(e: EndpointRow, now: Date) {
  const until = e.throttled_until && e.throttled_until.getTime() > now.getTime() ? e.throttled_until : null;
  if (until === null && e.throttle_limit === null) return null;
  return { until: until?.toISOString() ?? null, max_in_flight: e.throttle_limit };
}

/**
 * Who disabled a disabled endpoint: Herald by itself ('automatic', after too
 * many consecutive failed deliveries), a panel user, an API key, or someone
 * by hand before Herald recorded who ('manual').
 */
function disabledByJson(e: EndpointRow) {
  if (e.enabled) return null;
  if (e.disabled_by === null) return { type: 'automatic' as const, id: null, name: null };
  return { type: e.disabled_by, id: e.disabled_by_id, name: e.disabled_by_name };
}

/** The public form of an endpoint. The signing secret never appears here, only its hint, nor a secret header's value. */
export function endpointJson(e: EndpointRow, ctx: EndpointContext, lastAttempt: AttemptRow | null = null) {
  return {
    id: e.id,
    url: e.url,
    description: e.description,
    event_types: e.event_types,
    state: e.enabled ? 'enabled' : 'disabled',
    disabled_reason: e.disabled_reason,
    disabled_at: e.disabled_at?.toISOString() ?? null,
    disabled_by: disabledByJson(e),
    failure_streak: e.failure_streak,
    failure_threshold: ctx.disableAfter,
    rate_limit: e.rate_limit,
    throttle: throttleJson(e, ctx.now),
    retention: { succeeded_days: ctx.retention.succeededDays, undelivered_days: ctx.retention.undeliveredDays },
    secret_hint: e.secret_hint,
    headers: (e.headers ?? []).map(headerView),
    metadata: e.metadata,
    signature_scheme: e.signature_scheme,
    previous_secret_expires_at: e.previous_secret_until && e.previous_secret_until.getTime() > ctx.now.getTime() ? e.previous_secret_until.toISOString() : null,
    created_at: e.created_at.toISOString(),
    updated_at: e.updated_at.toISOString(),
    last_attempt: lastAttempt ? attemptJson(lastAttempt) : null,
  };
}

// Shared with the operator commands, so it lives with the event-type service.
export { eventTypeJson } from '../services/event-types.ts';

const text = (b: Buffer | null) => (b === null ? null : b.toString('utf8'));

export function attemptJson(a: AttemptRow) {
  return {
    id: a.id,
    endpoint_id: a.endpoint_id,
    delivery_id: a.delivery_id,
    event_id: a.event_id,
    event_type: a.event_type,
    attempt_number: a.attempt_number,
    is_test: a.is_test,
    started_at: a.started_at.toISOString(),
    duration_ms: a.duration_ms,
    status_code: a.status_code,
    outcome: a.outcome,
    error: a.error,
    response_excerpt: text(a.response_excerpt),
    delivery_state: a.delivery_state,
  };
}

/** `fallbackUrl`: the endpoint's address, for attempts recorded before addresses were kept. */
export function attemptDetailJson(a: AttemptDetailRow, fallbackUrl: string) {
  return { ...attemptJson(a), request: { url: a.url ?? fallbackUrl, headers: loggedHeaders(a), body: text(a.body) } };
}

/** An attempt just made (a test event), in the same form as one read back from the log. */
export function attemptRecordJson(a: AttemptRecord) {
  return attemptDetailJson(
    {
      id: a.id,
      endpoint_id: a.endpointId,
      delivery_id: a.deliveryId,
      event_id: a.eventId,
      event_type: a.eventType,
      attempt_number: a.attemptNumber,
      is_test: a.isTest,
      started_at: a.startedAt,
      duration_ms: a.durationMs,
      status_code: a.statusCode,
      outcome: a.outcome,
      error: a.error,
      response_excerpt: a.responseExcerpt,
      delivery_state: null,
      url: a.url,
      request_headers: null,
      signature: a.signature,
      body: a.testBody,
    },
    a.url,
  );
}

export function deliveryJson(d: DeliverySummaryRow & { event_id: string }) {
  return {
    id: d.id,
    event_id: d.event_id,
    endpoint_id: d.endpoint_id,
    state: d.state,
    attempts: d.attempts,
    next_attempt_at: d.state === 'pending' ? d.next_attempt_at.toISOString() : null,
    last_status: d.last_status,
    last_error: d.last_error,
    created_at: d.created_at.toISOString(),
    updated_at: d.updated_at.toISOString(),
  };
}

export function eventJson(e: EventRow) {
  return { id: e.id, type: e.type, created_at: e.created_at.toISOString(), payload: JSON.parse(e.body.toString('utf8')) as unknown };
}

export function apiKeyJson(k: ApiKeyRow) {
  return { id: k.id, name: k.name, prefix: k.prefix, created_at: k.created_at.toISOString(), revoked_at: k.revoked_at?.toISOString() ?? null };
}
