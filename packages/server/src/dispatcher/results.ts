import type { RetrySchedule } from '../config.ts';
import { envelopeCreatedAt } from '../core/envelope.ts';
import { classifyOutcome, resultLabel } from '../core/outcome.ts';
import { nextAttemptAt, parseRetryAfter } from '../core/retry-policy.ts';
import type { SendResult } from '../outbound/send.ts';
import type { ClaimedDelivery } from '../storage/queries/claim-deliveries.ts';
import type { DeliveryResult, ResultOutcome } from '../storage/queries/record-results.ts';

/**
 * What the worker saw of a sent attempt besides what is stored, for the
 * metrics and the log (`observeResults`); it travels with the result to the
 * recorder and is never written.
 */
export interface Seen {
  /** How the attempt ended, in a few fixed words (`resultLabel`). */
  result: string;
  /** The event's created_at, for a delivery that succeeded. */
  eventCreatedAt: Date | null;
}

export type SeenResult = DeliveryResult & { seen?: Seen };

/** A claimed delivery's result with nothing sent (skipped, or given back unsent). */
export function unsent(d: ClaimedDelivery, outcome: ResultOutcome, error: string | null = null): SeenResult {
  return { deliveryId: d.id, leaseToken: d.lease_token, endpointId: d.endpoint_id, outcome, retryInMs: null, status: null, error, throttle: null, attempt: null, seen: undefined };
}

/**
 * What becomes of a delivery, given how its attempt ended: the receiver's
 * answer classified (classifyOutcome), a retry scheduled by the retry policy
 * (Retry-After honoured), 429 and 503 answers slowing the endpoint down. An
 * attempt aborted at shutdown is given back: not the receiver's doing, so no
 * attempt is spent.
 */
export function resultOf(
  d: ClaimedDelivery,
  sent: SendResult,
  sentAs: { id: string; startedAt: Date; signature: string },
  p: { now: Date; random: () => number; schedule: RetrySchedule },
): SeenResult {
  const verdict = classifyOutcome(sent.result);
  const aborted = sent.result.stage === 'transport' && sent.result.kind === 'aborted';
  let outcome: ResultOutcome = aborted ? 'given_back' : verdict.verdict === 'success' ? 'succeeded' : 'failed';
  let error = verdict.error;
  let retryInMs: number | null = null;
  const retryAfterMs = parseRetryAfter(sent.result.stage === 'response' ? sent.result.retryAfter : undefined, p.now);
  if (!aborted && verdict.verdict === 'retry') {
    const next = nextAttemptAt({ attempt: d.attempt, now: p.now, random: p.random, schedule: p.schedule, retryAfterMs });
    if (next) [outcome, retryInMs] = ['retry', next.getTime() - p.now.getTime()];
    else error = `${error}; gave up after ${p.schedule.maxRetries + 1} attempts`;
  }
  // Every field written out, in unsent's order: a result has one shape,
  // whichever way it was made, and the recorder reads it without a lookup.
  return {
    deliveryId: d.id,
    leaseToken: d.lease_token,
    endpointId: d.endpoint_id,
    outcome,
    retryInMs,
    status: verdict.status,
    error,
    throttle: verdict.status === 429 || verdict.status === 503 ? { retryAfterMs: retryAfterMs ?? null } : null,
    attempt: {
      id: sentAs.id,
      accountId: d.account_id,
      endpointId: d.endpoint_id,
      deliveryId: d.id,
      eventId: d.event_id,
      eventType: d.type,
      attemptNumber: d.attempt,
      isTest: false,
      startedAt: sentAs.startedAt,
      durationMs: sent.durationMs,
      statusCode: verdict.status,
      outcome: outcome === 'succeeded' ? 'succeeded' : outcome === 'failed' ? 'failed' : 'retrying',
      error,
      url: d.url,
      signature: sentAs.signature,
      responseExcerpt: sent.excerpt,
      testBody: null,
    },
    seen: { result: resultLabel(sent.result), eventCreatedAt: outcome === 'succeeded' ? envelopeCreatedAt(d.body) : null },
  };
}
