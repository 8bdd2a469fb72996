import type { WebhookEvent } from './events.ts';
import { hmacSha256WithKeySync } from './hmac-node.ts';
import {
  completeStandardVerification,
  formatStandardSignature,
  prepareStandardVerification,
  standardKeyBytes,
  standardSignedParts,
  type StandardVerifyInput,
} from './standard-webhooks.ts';
import type { StandardSignInput } from './standard-webhooks-verify.ts';

/** `verifyStandard` on `node:crypto`, synchronous: the same checks and error codes. */
export function verifyStandardSync(input: StandardVerifyInput): WebhookEvent {
  const request = prepareStandardVerification(input);
  return completeStandardVerification(request, request.keys.map((key) => hmacSha256WithKeySync(key, [request.payload])));
}

/**
 * One `webhook-signature` entry, `v1,<base64>`, on `node:crypto`,
 * synchronous. Herald's dispatcher signs Standard Webhooks attempts with it.
 */
export function signStandardSync({ id, timestamp, body, secret }: StandardSignInput): string {
  return formatStandardSignature(hmacSha256WithKeySync(standardKeyBytes(secret), standardSignedParts(id, String(timestamp), body)));
}
