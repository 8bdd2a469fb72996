/**
 * @herald/verify: verify Herald webhook requests anywhere Web Crypto runs
 * (Node 20+, Deno, Bun, Cloudflare Workers, browsers). Node code that wants
 * synchronous calls imports `@herald/verify/node` instead, which exports all
 * of this plus `verifySync` and `signSync`.
 */
export { CONTENT_TYPE, HEADER, SIGNATURE_PREFIX, USER_AGENT, type RawBody } from './scheme.ts';
export { verify } from './verify.ts';
export type { VerifyInput } from './verification.ts';
export type { HeadersLike } from './headers.ts';
export { VERIFICATION_ERRORS, WebhookVerificationError, type VerificationErrorCode } from './errors.ts';
export { MAX_TOLERANCE_SECONDS } from './timestamp.ts';
export {
  EVENT_TYPE,
  isKnownEvent,
  type Alarm,
  type EventData,
  type EventDataMap,
  type HeraldEvent,
  type KnownEventType,
  type OpenEnum,
  type Shipment,
  type WebhookEvent,
} from './events.ts';
export { MemoryIdempotencyStore, type IdempotencyStore, type MemoryIdempotencyStoreOptions } from './idempotency.ts';
export { sign, type SignInput } from './sign.ts';
export { STANDARD_HEADER, STANDARD_SIGNATURE_PREFIX, type StandardVerifyInput } from './standard-webhooks.ts';
export { signStandard, verifyStandard, type StandardSignInput } from './standard-webhooks-verify.ts';
export { createTestRequest, type TestRequest, type TestRequestInput } from './test-request.ts';
