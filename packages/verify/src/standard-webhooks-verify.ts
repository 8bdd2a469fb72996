import type { WebhookEvent } from './events.ts';
import { hmacSha256WithKey } from './hmac-web.ts';
import {
  completeStandardVerification,
  formatStandardSignature,
  prepareStandardVerification,
  standardKeyBytes,
  standardSignedPayload,
  type StandardVerifyInput,
} from './standard-webhooks.ts';
import type { RawBody } from './scheme.ts';

/**
 * Verifies a request from an endpoint that uses the Standard Webhooks scheme
 * (`webhook-id`, `webhook-timestamp`, `webhook-signature`), with Web Crypto,
 * and returns its envelope. The same checks as {@link verify}, in the same
 * order, with the same error codes; the secret is the endpoint's
 * `whsec_<base64>` secret.
 *
 * @example
 * const event = await verifyStandard({ body: await request.text(), headers: request.headers, secret: env.WEBHOOK_SECRET });
 */
export async function verifyStandard(input: StandardVerifyInput): Promise<WebhookEvent> {
  const request = prepareStandardVerification(input);
  const digests = await Promise.all(request.keys.map((key) => hmacSha256WithKey(key, request.payload)));
  return completeStandardVerification(request, digests);
}

export interface StandardSignInput {
  /** The message id, sent as `webhook-id`. */
  id: string;
  /** Unix time in seconds, sent as `webhook-timestamp`. */
  timestamp: number | string;
  /** The raw request body, exactly the bytes that are sent. */
  body: RawBody;
  /** The endpoint's `whsec_<base64>` secret. */
  secret: string;
}

/** Computes one `webhook-signature` entry, `v1,<base64>`, with Web Crypto. */
export async function signStandard({ id, timestamp, body, secret }: StandardSignInput): Promise<string> {
  return formatStandardSignature(await hmacSha256WithKey(standardKeyBytes(secret), standardSignedPayload(id, String(timestamp), body)));
}
