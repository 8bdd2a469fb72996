import assert from 'node:assert/strict';
import {
  sign,
  verify,
  WebhookVerificationError,
  type SignInput,
  type VerificationErrorCode,
  type VerifyInput,
  type WebhookEvent,
} from '../src/index.ts';
import { signSync, verifySync } from '../src/node.ts';

/**
 * The two HMAC back ends. Every behavioural test runs once per back end
 * (`for (const backend of BACKENDS)`), so the Web Crypto path and the
 * node:crypto path are held to exactly the same expectations.
 */
export interface Backend {
  name: string;
  verify(input: VerifyInput): Promise<WebhookEvent>;
  sign(input: SignInput): Promise<string>;
}

export const BACKENDS: readonly Backend[] = [
  { name: 'Web Crypto', verify, sign },
  {
    name: 'node:crypto',
    // async wrappers turn a synchronous throw into a rejection, so the same
    // assert.rejects works for both.
    verify: async (input) => verifySync(input),
    sign: async (input) => signSync(input),
  },
];

export const SECRET = 'whsec_MfKQ9r8GKYqrTAJpPF5gmNEz1n2zyvX1k6eA2gJqcnw';
export const NOW = 1_700_000_000;

/** A compact envelope body, as Herald serialises it. */
export function envelopeBody(overrides: Record<string, unknown> = {}): string {
  return JSON.stringify({
    id: '0b7c1f5e-3a4d-4e2b-9c1a-8f6d2e7b5a90',
    type: 'alarm.created',
    created_at: '2023-11-14T22:13:20.000Z',
    data: { id: 'a3c1e2b4-5d6f-4a7b-8c9d-0e1f2a3b4c5d', resolved: false },
    ...overrides,
  });
}

/** Headers for `body` signed with `secret` at `timestamp`, as a plain object with Herald's header names. */
export async function signedHeaders(
  backend: Backend,
  { body, secret = SECRET, timestamp = NOW }: { body: string | Uint8Array; secret?: string; timestamp?: number | string },
): Promise<Record<string, string>> {
  return {
    'X-Service-Timestamp': String(timestamp),
    'X-Service-Signature': await backend.sign({ body, secret, timestamp }),
  };
}

/**
 * A validator for `assert.rejects` / `assert.throws`: the error is a
 * WebhookVerificationError with this code.
 */
export function isCode(code: VerificationErrorCode): (error: unknown) => true {
  return (error) => {
    assert.ok(error instanceof WebhookVerificationError, `expected a WebhookVerificationError, got ${String(error)}`);
    assert.equal(error.code, code, error.message);
    return true;
  };
}
