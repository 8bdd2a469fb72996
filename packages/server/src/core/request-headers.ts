import { CONTENT_TYPE, HEADER, STANDARD_HEADER, STANDARD_SIGNATURE_PREFIX, USER_AGENT } from '@herald/verify';
import { signStandardSync, signSync } from '@herald/verify/node';
import { unixSeconds } from './clock.ts';
import type { SignatureScheme } from './secrets.ts';

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
  if (p.signature.startsWith(STANDARD_SIGNATURE_PREFIX)) return standardAttemptHeaders(p);
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
 * The Standard Webhooks form of the same attempt. `webhook-id` is the
 * message's id, the same on every attempt of it, as that specification asks
 * (receivers skip duplicates by it): the event id, which also stays the same
 * across redeliveries and recoveries. Which form an attempt in the log had
 * shows in its stored signature: `v1,…` here, `v1=…` in Herald's.
 */
function standardAttemptHeaders(p: { eventId: string; timestamp: number; signature: string }): Record<string, string> {
  return {
    [HEADER.contentType]: CONTENT_TYPE,
    [HEADER.userAgent]: USER_AGENT,
    [STANDARD_HEADER.id]: p.eventId,
    [STANDARD_HEADER.timestamp]: String(p.timestamp),
    [STANDARD_HEADER.signature]: p.signature,
  };
}

/**
 * The headers of one attempt, signed at send time through the one signer in
 * @herald/verify, in the endpoint's scheme, with the endpoint's current
 * secret and, during a rotation's overlap, its previous one too: the
 * signatures space-separated, the new one first. Without a previous secret
 * a Herald-scheme request is exactly what it always was.
 * The endpoint's custom headers (`custom`, checked when saved: none can take
 * a name Herald sets, in either scheme) come first, and Herald's own are set
 * over them all the same.
 */
export function buildRequestHeaders(p: {
  eventType: string;
  eventId: string;
  attemptId: string;
  timestamp: number;
  body: Buffer;
  secret: string;
  previousSecret?: string | undefined;
  scheme?: SignatureScheme;
  custom?: ReadonlyArray<readonly [string, string]>;
}): Record<string, string> {
  const sign =
    p.scheme === 'standard-webhooks'
      ? (secret: string) => signStandardSync({ id: p.eventId, timestamp: p.timestamp, body: p.body, secret })
      : (secret: string) => signSync({ body: p.body, secret, timestamp: p.timestamp });
  const signature = p.previousSecret === undefined ? sign(p.secret) : `${sign(p.secret)} ${sign(p.previousSecret)}`;
  const own = attemptHeaders({ eventType: p.eventType, eventId: p.eventId, attemptId: p.attemptId, timestamp: p.timestamp, signature });
  if (!p.custom || p.custom.length === 0) return own;
  return { ...Object.fromEntries(p.custom), ...own };
}

/** The signature header of headers built above, whichever the scheme. */
export function signatureOf(headers: Record<string, string>): string {
  return headers[HEADER.signature] ?? headers[STANDARD_HEADER.signature]!;
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
