import type { WebhookVerificationError } from './errors.ts';
import type { isKnownEvent, WebhookEvent } from './events.ts';
import { hmacSha256 } from './hmac-web.ts';
import { completeVerification, prepareVerification, type VerifyInput } from './verification.ts';

/**
 * Verifies a Herald webhook request with Web Crypto (Node 20+, Deno, Bun,
 * Workers, browsers) and returns its parsed envelope.
 *
 * Checks, in order: the headers are present and well-formed, the timestamp is
 * within 300 s of `now` either way, a `v1=` signature matches
 * HMAC-SHA256(secret, `<timestamp>.<raw body>`) in constant time, and the body
 * is an envelope. Any failure rejects with a {@link WebhookVerificationError}
 * whose `code` says which; do not process the request then. A mistake in the
 * call itself (no secret, a tolerance over 300) rejects with a `TypeError` or
 * `RangeError` instead.
 *
 * @returns the envelope `{ id, type, created_at, data }`; narrow it with
 * {@link isKnownEvent} to get typed `data`.
 *
 * @example
 * // A Fetch handler (Workers, Deno, Bun, Next.js App Router)
 * const event = await verify({
 *   body: await request.text(),
 *   headers: request.headers,
 *   secret: env.HERALD_WEBHOOK_SECRET,
 * });
 */
export async function verify(input: VerifyInput): Promise<WebhookEvent> {
  const request = prepareVerification(input);
  const digests = await Promise.all(request.secrets.map((secret) => hmacSha256(secret, request.payload)));
  return completeVerification(request, digests);
}
