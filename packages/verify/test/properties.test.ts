import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { WebhookVerificationError, type HeadersLike, type VerificationErrorCode } from '../src/index.ts';
import { BACKENDS, SECRET } from './backends.ts';

/**
 * Property tests: thousands of generated requests per back end. Each
 * property runs RUNS times per back end (fast-check prints the seed and the
 * shrunk counterexample on failure; rerun with { seed, path } to replay).
 */
const RUNS = 1000;

// Unix seconds anywhere from 1970 to 2286, and a `now` up to 1000 s away.
const timestampArb = fc.nat({ max: 9_999_999_999 });
// Secrets as a receiver could hold them: printable ASCII without surrounding
// whitespace (verify refuses that as a configuration mistake).
const secretArb = fc.string({ minLength: 1, maxLength: 80 }).filter((s) => s.trim() === s && s !== '');
const envelopeArb = fc.record({
  id: fc.uuid(),
  type: fc.string({ minLength: 1, maxLength: 30 }),
  created_at: fc.date({ noInvalidDate: true, min: new Date(0), max: new Date(8.64e15) }).map((d) => d.toISOString()),
  data: fc.dictionary(fc.string({ maxLength: 10 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 6 }),
});

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => assert.fail('expected verification to fail'),
    (error: unknown) => error,
  );
}

function assertCode(error: unknown, codes: readonly VerificationErrorCode[]): void {
  assert.ok(error instanceof WebhookVerificationError, `expected a WebhookVerificationError, got ${String(error)}`);
  assert.ok(codes.includes(error.code), `unexpected ${error.code}: ${error.message}`);
}

function flipBit(bytes: Uint8Array, bit: number): Uint8Array {
  const copy = Uint8Array.from(bytes);
  const index = Math.floor(bit / 8) % copy.length;
  copy[index]! ^= 1 << bit % 8;
  return copy;
}

/** Flips one of the low 7 bits of one character, so the result stays ASCII and always differs. */
function flipCharBit(text: string, position: number, bit: number): string {
  const i = position % text.length;
  return text.slice(0, i) + String.fromCharCode(text.charCodeAt(i) ^ (1 << bit % 7)) + text.slice(i + 1);
}

for (const backend of BACKENDS) {
  test(`${backend.name}: verify(sign(x)) returns the envelope, for string and byte bodies`, async () => {
    await fc.assert(
      fc.asyncProperty(
        envelopeArb, secretArb, timestampArb, fc.integer({ min: -300, max: 300 }), fc.boolean(),
        async (envelope, secret, timestamp, offset, asBytes) => {
          fc.pre(timestamp + offset >= 0);
          const text = JSON.stringify(envelope);
          const body = asBytes ? new TextEncoder().encode(text) : text;
          const headers = {
            'x-service-timestamp': String(timestamp),
            'x-service-signature': await backend.sign({ body, secret, timestamp }),
          };
          const event = await backend.verify({ body, headers, secret, now: timestamp + offset });
          assert.deepEqual(event, JSON.parse(text));
        },
      ),
      { numRuns: RUNS },
    );
  });

  test(`${backend.name}: any bytes signed by Herald pass the signature check`, async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 512 }), secretArb, timestampArb, async (body, secret, timestamp) => {
        const headers = { 'X-Service-Timestamp': String(timestamp), 'X-Service-Signature': await backend.sign({ body, secret, timestamp }) };
        // Either it is an envelope, or it fails only at the envelope step, after the signature matched.
        await backend.verify({ body, headers, secret, now: timestamp }).catch((error: unknown) => assertCode(error, ['invalid_envelope']));
      }),
      { numRuns: RUNS },
    );
  });

  test(`${backend.name}: the timestamp is accepted exactly when |now - t| <= tolerance`, async () => {
    await fc.assert(
      fc.asyncProperty(
        timestampArb, fc.integer({ min: -1000, max: 1000 }), fc.integer({ min: 0, max: 300 }),
        async (timestamp, offset, toleranceSeconds) => {
          fc.pre(timestamp + offset >= 0);
          const body = JSON.stringify({ id: 'e', type: 't', created_at: '', data: {} });
          const headers = { 'X-Service-Timestamp': String(timestamp), 'X-Service-Signature': await backend.sign({ body, secret: SECRET, timestamp }) };
          const verifying = backend.verify({ body, headers, secret: SECRET, now: timestamp + offset, toleranceSeconds });
          if (Math.abs(offset) <= toleranceSeconds) await verifying;
          else assertCode(await rejection(verifying), [offset > 0 ? 'timestamp_too_old' : 'timestamp_in_future']);
        },
      ),
      { numRuns: RUNS },
    );
  });

  test(`${backend.name}: flipping any bit of the body, timestamp, signature or secret fails`, async () => {
    await fc.assert(
      fc.asyncProperty(
        envelopeArb, secretArb, timestampArb,
        fc.constantFrom('body', 'timestamp', 'signature header', 'signature digest', 'secret'),
        fc.nat(), fc.nat(),
        async (envelope, secret, timestamp, target, position, bit) => {
          const body = new TextEncoder().encode(JSON.stringify(envelope));
          const signature = await backend.sign({ body, secret, timestamp });
          const request: { body: Uint8Array; secret: string; timestampText: string; signature: string } = {
            body, secret, timestampText: String(timestamp), signature,
          };
          let expected: VerificationErrorCode[];
          switch (target) {
            case 'body':
              request.body = flipBit(body, position * 8 + bit);
              expected = ['no_matching_signature'];
              break;
            case 'timestamp':
              request.timestampText = flipCharBit(request.timestampText, position, bit);
              expected = ['malformed_timestamp', 'timestamp_too_old', 'timestamp_in_future', 'no_matching_signature'];
              break;
            case 'signature header':
              request.signature = flipCharBit(signature, position, bit);
              expected = ['malformed_signature', 'no_matching_signature'];
              break;
            case 'signature digest': {
              const digest = flipBit(Buffer.from(signature.slice(3), 'hex'), position * 8 + bit);
              request.signature = `v1=${Buffer.from(digest).toString('hex')}`;
              expected = ['no_matching_signature'];
              break;
            }
            case 'secret':
              request.secret = flipCharBit(secret, position, bit);
              fc.pre(request.secret.trim() === request.secret);
              expected = ['no_matching_signature'];
              break;
          }
          const headers = { 'X-Service-Timestamp': request.timestampText, 'X-Service-Signature': request.signature };
          const error = await rejection(backend.verify({ body: request.body, headers, secret: request.secret, now: timestamp }));
          assertCode(error, expected);
        },
      ),
      { numRuns: RUNS * 2 },
    );
  });

  test(`${backend.name}: arbitrary header values never throw anything but WebhookVerificationError`, async () => {
    const knownName = fc.constantFrom(
      'X-Service-Timestamp', 'x-service-timestamp', 'X-SERVICE-TIMESTAMP',
      'X-Service-Signature', 'x-service-signature', 'x-SERVICE-signature',
    );
    const text = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 200 }),
      fc.stringMatching(/^[0-9 +\-.eE,]{0,16}$/),
      fc.stringMatching(/^(v[0-9]=[0-9a-fA-F]{0,66}[ ,]*){0,3}$/),
    );
    const value = fc.oneof(
      text,
      fc.array(text, { maxLength: 3 }),
      fc.integer(),
      fc.double(),
      fc.constant(undefined),
      fc.constant(null),
      fc.anything({ maxDepth: 1 }),
    );
    const plainHeaders = fc.dictionary(fc.oneof(knownName, fc.string({ maxLength: 20 })), value, { maxKeys: 6 });
    // Anything with a get() method is read like a Fetch Headers, whatever get returns.
    const getterHeaders = fc.dictionary(knownName, value).map((values): HeadersLike => ({
      get: (name: string) => values[name] as string,
    }));
    const body = JSON.stringify({ id: 'e', type: 't', created_at: '', data: {} });
    await fc.assert(
      fc.asyncProperty(fc.oneof(plainHeaders, getterHeaders), fc.nat({ max: 99_999_999_999 }), async (headers, now) => {
        const error = await rejection(backend.verify({ body, headers: headers as HeadersLike, secret: SECRET, now }));
        assert.ok(error instanceof WebhookVerificationError, `expected a WebhookVerificationError, got ${String(error)}`);
      }),
      { numRuns: RUNS },
    );
  });
}
