import { hmacSha256HexSync } from './hmac-node.ts';
import { formatHexSignature, signedParts } from './scheme.ts';
import type { SignInput } from './sign.ts';

/**
 * Synchronous signer on `node:crypto`, for Node servers that sign on the hot
 * path. Herald's own dispatcher signs every attempt with this function.
 *
 * @example
 * const header = signSync({ body, secret, timestamp: Math.floor(Date.now() / 1000) });
 */
export function signSync({ body, secret, timestamp }: SignInput): string {
  return formatHexSignature(hmacSha256HexSync(secret, signedParts(String(timestamp), body)));
}
