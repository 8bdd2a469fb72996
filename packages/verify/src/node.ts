/**
 * The Node entry: everything `@herald/verify` exports, plus synchronous
 * versions on `node:crypto`. The checks, error codes and messages are the
 * same; only the HMAC back end differs.
 */
export * from './index.ts';
export { signSync } from './sign-sync.ts';
export { verifySync } from './verify-sync.ts';
export { signStandardSync, verifyStandardSync } from './standard-webhooks-sync.ts';
