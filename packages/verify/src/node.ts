import { createHmac } from 'node:crypto';
import { formatSignature, secretKeyBytes, signedPayload } from './scheme.ts';
import type { SignInput } from './index.ts';

export * from './index.ts';

/**
 * Synchronous signer on `node:crypto`, for Node servers that verify on the
 * hot path. Herald's own dispatcher signs every attempt with this function.
 *
 * @example
 * const header = signSync({ body, secret, timestamp: Math.floor(Date.now() / 1000) });
 */
export function signSync({ body, secret, timestamp }: SignInput): string {
  const hmac = createHmac('sha256', secretKeyBytes(secret));
  hmac.update(signedPayload(String(timestamp), body));
  return formatSignature(hmac.digest());
}
