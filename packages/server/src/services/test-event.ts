import { unixSeconds } from '../core/clock.ts';
import { serialiseEnvelope } from '../core/envelope.ts';
import { classifyOutcome, type AttemptResult } from '../core/outcome.ts';
import { openHeaders } from '../core/custom-headers.ts';
import { decryptSecret } from '../core/secrets.ts';
import { buildRequestHeaders, signatureOf } from '../core/request-headers.ts';
import { invalidField } from '../errors.ts';
import { getEventTypes } from '../storage/queries/event-types.ts';
import * as q from '../storage/queries/endpoints.ts';
import { ATTEMPTS_KEPT, insertAttempts, pruneAttempts, type AttemptRecord } from '../storage/queries/record-results.ts';
import type { ServiceDeps } from './deps.ts';
import { endpointNotFound } from './endpoints.ts';

/** The type of the default test event; receivers ignore unknown types. */
export const TEST_EVENT_TYPE = 'webhook.test';

/** One signed request for the sender to make. */
export interface OutboundRequest {
  url: string;
  headers: Record<string, string>;
  body: Buffer;
}

/** What came of it: the answer or the transport error, the start of the body, how long it took. */
export interface OutboundAnswer {
  result: AttemptResult;
  excerpt: Buffer | null;
  durationMs: number;
}

/**
 * How the API process sends test events. The sender lives in the outbound
 * layer; the composition root binds it to a small pool of the API's own and
 * the delivery deadline, so this layer needs neither.
 */
export interface OutboundDeps {
  send(request: OutboundRequest): Promise<OutboundAnswer>;
}

/**
 * Sends one test event to an endpoint and waits for the answer (at most the
 * 10 s deadline). A test is one attempt: never retried, recorded in the
 * attempt log marked as a test, not counted toward disabling, and allowed on a
 * disabled endpoint so a fix can be checked before re-enabling.
 *
 * @example
 *   const attempt = await sendTestEvent(deps, outbound, accountId, endpointId, { event_type: 'alarm.created' });
 *   attempt.outcome; // 'succeeded' | 'failed'
 */
export async function sendTestEvent(
  deps: ServiceDeps,
  outbound: OutboundDeps,
  accountId: string,
  endpointId: string,
  input: { event_type?: unknown },
): Promise<AttemptRecord> {
  const endpoint = await q.getEndpoint(deps.db, accountId, endpointId);
  if (!endpoint) throw endpointNotFound(endpointId);
  const type = input.event_type === undefined ? TEST_EVENT_TYPE : input.event_type;
  if (typeof type !== 'string' || type === '') throw invalidField('event_type', `must be an event type name, or left out to send "${TEST_EVENT_TYPE}"`);

  let data: unknown;
  if (type === TEST_EVENT_TYPE) {
    data = { endpoint_id: endpoint.id, message: 'A test event from Herald. Nothing happened; answer 2xx to show that this endpoint works.' };
  } else {
    const [known] = await getEventTypes(deps.db, [type]);
    if (!known) throw invalidField('event_type', `"${type}" is not in the catalog; list it with GET /v1/event-types`, 'unknown_event_type');
    if (known.example === null) throw invalidField('event_type', `"${type}" has no example record to send; send "${TEST_EVENT_TYPE}" instead`);
    data = known.example;
  }

  const startedAt = deps.clock();
  const previous = endpoint.previous_secret_encrypted;
  const previousUntil = endpoint.previous_secret_until;
  const overlapping = previous !== null && previousUntil !== null && previousUntil > startedAt;
  // A test is a use too: an old secret found expired is erased, as an attempt would.
  if (previous !== null && previousUntil !== null && !overlapping) await q.eraseExpiredPreviousSecret(deps.db, endpoint.id, previousUntil, startedAt);
  const eventId = deps.ids.next(startedAt.getTime());
  const attemptId = deps.ids.next(startedAt.getTime());
  const body = serialiseEnvelope({ id: eventId, type, created_at: startedAt.toISOString(), data });
  const headers = buildRequestHeaders({
    eventType: type,
    eventId,
    attemptId,
    timestamp: unixSeconds(startedAt),
    body,
    scheme: endpoint.signature_scheme,
    secret: decryptSecret(deps.encryptionKey, endpoint.secret_encrypted, endpoint.id),
    custom: openHeaders(deps.encryptionKey, endpoint.id, endpoint.headers ?? []),
    // Signed as deliveries are, with the previous secret too while its overlap runs.
    previousSecret: overlapping ? decryptSecret(deps.encryptionKey, previous, endpoint.id) : undefined,
  });
  const sent = await outbound.send({ url: endpoint.url, headers, body });
  const outcome = classifyOutcome(sent.result);
  const attempt: AttemptRecord = {
    id: attemptId,
    accountId,
    endpointId: endpoint.id,
    deliveryId: null,
    eventId,
    eventType: type,
    attemptNumber: 1,
    isTest: true,
    startedAt,
    durationMs: sent.durationMs,
    statusCode: outcome.status,
    outcome: outcome.verdict === 'success' ? 'succeeded' : 'failed',
    error: outcome.error,
    url: endpoint.url,
    signature: signatureOf(headers),
    responseExcerpt: sent.excerpt,
    testBody: body,
  };
  await insertAttempts(deps.db, [attempt]);
  await pruneAttempts(deps.db, [endpoint.id], ATTEMPTS_KEPT);
  return attempt;
}
