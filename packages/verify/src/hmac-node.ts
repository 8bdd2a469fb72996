import { createHmac } from 'node:crypto';
import { secretKeyBytes } from './scheme.ts';

/** HMAC-SHA256 on `node:crypto`, synchronous. */
export function hmacSha256Sync(secret: string, payload: Uint8Array): Uint8Array {
  return createHmac('sha256', secretKeyBytes(secret)).update(payload).digest();
}
