import { hmacSha256Sync } from './hmac-node.ts';
import { formatSignature, signedPayload } from './scheme.ts';
import type { SignInput } from './sign.ts';

/**
 * Synchronous signer on `node:crypto`, for Node servers that sign on the hot
 * path. Herald's own dispatcher signs every attempt with this function.
 *
 * @example
 * const header = signSync({ body, secret, timestamp: Math.floor(Date.now() / 1000) });
 */
export function signSync({ body, secret, timestamp }: SignInput): string {
  return formatSignature(hmacSha256Sync(secret, signedPayload(String(timestamp), body)));
}
