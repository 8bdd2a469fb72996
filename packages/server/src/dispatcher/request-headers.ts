import { CONTENT_TYPE, HEADER, USER_AGENT } from '@herald/verify';
import { signSync } from '@herald/verify/node';

/**
 * The headers of one attempt, exactly as SPEC.md names them, signed at send
 * time with the endpoint's current secret through the one signer in
 * @herald/verify.
 */
export function buildRequestHeaders(p: {
  eventType: string;
  eventId: string;
  attemptId: string;
  timestamp: number;
  body: Buffer;
  secret: string;
}): Record<string, string> {
  return {
    [HEADER.contentType]: CONTENT_TYPE,
    [HEADER.userAgent]: USER_AGENT,
    [HEADER.event]: p.eventType,
    [HEADER.eventId]: p.eventId,
    [HEADER.deliveryId]: p.attemptId,
    [HEADER.timestamp]: String(p.timestamp),
    [HEADER.signature]: signSync({ body: p.body, secret: p.secret, timestamp: p.timestamp }),
  };
}
