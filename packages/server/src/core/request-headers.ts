import { CONTENT_TYPE, HEADER, USER_AGENT } from '@herald/verify';
import { signSync } from '@herald/verify/node';
import { unixSeconds } from './clock.ts';

/**
 * The headers of one attempt, exactly as receivers are told to expect them. Every one but
 * the signature follows from what the attempt log keeps in columns (the
 * attempt's id, its start, its event), so the log stores the signature alone
 * and shows the headers through this same function (`loggedHeaders`): what
 * is shown cannot drift from what is sent. That holds while CONTENT_TYPE and
 * USER_AGENT stay as they are: a change to either must store them with the
 * attempts sent from then on (docs/delivery.md, "The attempt log").
 */
export function attemptHeaders(p: { eventType: string; eventId: string; attemptId: string; timestamp: number; signature: string }): Record<string, string> {
  return {
    [HEADER.contentType]: CONTENT_TYPE,
    [HEADER.userAgent]: USER_AGENT,
    [HEADER.event]: p.eventType,
    [HEADER.eventId]: p.eventId,
    [HEADER.deliveryId]: p.attemptId,
    [HEADER.timestamp]: String(p.timestamp),
    [HEADER.signature]: p.signature,
  };
}

/**
 * The headers of one attempt, signed at send time with the endpoint's
 * current secret through the one signer in @herald/verify. The endpoint's
 * custom headers (`custom`, checked when saved: none can take a name Herald
 * sets) come first, and Herald's own are set over them all the same.
 */
export function buildRequestHeaders(p: {
  eventType: string;
  eventId: string;
  attemptId: string;
  timestamp: number;
  body: Buffer;
  secret: string;
  custom?: ReadonlyArray<readonly [string, string]>;
}): Record<string, string> {
  const signature = signSync({ body: p.body, secret: p.secret, timestamp: p.timestamp });
  const own = attemptHeaders({ eventType: p.eventType, eventId: p.eventId, attemptId: p.attemptId, timestamp: p.timestamp, signature });
  if (!p.custom || p.custom.length === 0) return own;
  return { ...Object.fromEntries(p.custom), ...own };
}

/** The signature header of headers built above. */
export function signatureOf(headers: Record<string, string>): string {
  return headers[HEADER.signature]!;
}

/**
 * The headers an attempt in the log was sent with: rebuilt from its columns
 * and stored signature, or, for attempts logged before migration 009, as
 * they were stored whole.
 */
export function loggedHeaders(a: {
  id: string;
  event_id: string;
  event_type: string;
  started_at: Date;
  request_headers: Record<string, string> | null;
  signature: string | null;
}): Record<string, string> {
  if (a.request_headers) return a.request_headers;
  return attemptHeaders({ eventType: a.event_type, eventId: a.event_id, attemptId: a.id, timestamp: unixSeconds(a.started_at), signature: a.signature ?? '' });
}
