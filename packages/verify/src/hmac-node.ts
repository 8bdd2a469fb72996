import { createHmac } from 'node:crypto';
import { checkedSecret, secretKeyBytes, toBytes, type RawBody } from './scheme.ts';

/** HMAC-SHA256 on `node:crypto`, synchronous. */
export function hmacSha256Sync(secret: string, payload: Uint8Array): Uint8Array {
  return createHmac('sha256', secretKeyBytes(secret)).update(payload).digest();
}

/** What createHmac's update() takes without a conversion. */
function hashable(part: string | RawBody): part is string | Uint8Array {
  return typeof part === 'string' || ArrayBuffer.isView(part);
}

/**
 * HMAC-SHA256 of parts fed in order, as lowercase hex, on `node:crypto`. The
 * signer's hot path: no copy of the body into one buffer, and the hex comes
 * from OpenSSL as one flat string (key = the secret's UTF-8 bytes, as
 * createHmac reads a string key).
 */
export function hmacSha256HexSync(secret: string, parts: readonly (string | RawBody)[]): string {
  // The parts first, then the secret: the order in which the one-buffer
  // signer reported a bad body and a bad secret given together. Strings and
  // views (the dispatcher's Buffers) go in as they are, with no new array.
  const data = parts.every(hashable) ? (parts as readonly (string | Uint8Array)[]) : parts.map((part) => (hashable(part) ? part : toBytes(part)));
  const hmac = createHmac('sha256', checkedSecret(secret));
  for (const part of data) hmac.update(part);
  return hmac.digest('hex');
}

/** HMAC-SHA256 under raw key bytes (the Standard Webhooks scheme's decoded secret), on `node:crypto`. */
export function hmacSha256WithKeySync(keyBytes: Uint8Array, parts: readonly (string | RawBody)[]): Uint8Array {
  const hmac = createHmac('sha256', keyBytes);
  for (const part of parts) hmac.update(hashable(part) ? part : toBytes(part));
  return hmac.digest();
}
