import type { WebhookVerificationError } from './errors.ts';
import type { WebhookEvent } from './events.ts';
import { hmacSha256Sync } from './hmac-node.ts';
import { completeVerification, prepareVerification, type VerifyInput } from './verification.ts';
import type { verify } from './verify.ts';

/**
 * {@link verify} on `node:crypto`, synchronous: the same checks in the same
 * order, throwing the same {@link WebhookVerificationError} codes. For Node
 * code that cannot await.
 *
 * @example
 * import { verifySync } from '@herald/verify/node';
 *
 * app.post('/webhooks/herald', express.raw({ type: 'application/json' }), (req, res) => {
 *   const event = verifySync({ body: req.body, headers: req.headers, secret: process.env.HERALD_WEBHOOK_SECRET });
 *   queue.push(event);
 *   res.sendStatus(204);
 * });
 */
export function verifySync(input: VerifyInput): WebhookEvent {
  const request = prepareVerification(input);
  return completeVerification(request, request.secrets.map((secret) => hmacSha256Sync(secret, request.payload)));
}
