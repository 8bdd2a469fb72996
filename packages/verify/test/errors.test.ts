import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import {
  VERIFICATION_ERRORS,
  WebhookVerificationError,
  type VerificationErrorCode,
  type VerifyInput,
} from '../src/index.ts';
import { BACKENDS, envelopeBody, isCode, NOW, SECRET, signedHeaders, type Backend } from './backends.ts';

/**
 * One request per error code. `satisfies Record<VerificationErrorCode, …>`
 * makes adding a code without a scenario a type error, and the test below
 * checks the table and the scenarios have the same keys at run time too.
 */
const SCENARIOS = {
  missing_header: async (b) => {
    const body = envelopeBody();
    const { 'X-Service-Signature': _, ...headers } = await signedHeaders(b, { body });
    return { body, headers, secret: SECRET, now: NOW };
  },
  malformed_timestamp: async (b) => {
    const body = envelopeBody();
    return { body, headers: { ...(await signedHeaders(b, { body })), 'X-Service-Timestamp': '1e9' }, secret: SECRET, now: NOW };
  },
  timestamp_too_old: async (b) => {
    const body = envelopeBody();
    return { body, headers: await signedHeaders(b, { body, timestamp: NOW - 301 }), secret: SECRET, now: NOW };
  },
  timestamp_in_future: async (b) => {
    const body = envelopeBody();
    return { body, headers: await signedHeaders(b, { body, timestamp: NOW + 301 }), secret: SECRET, now: NOW };
  },
  malformed_signature: async (b) => {
    const body = envelopeBody();
    return { body, headers: { ...(await signedHeaders(b, { body })), 'X-Service-Signature': 'v1=abc' }, secret: SECRET, now: NOW };
  },
  no_matching_signature: async (b) => {
    const body = envelopeBody();
    return { body, headers: await signedHeaders(b, { body, secret: 'whsec_other' }), secret: SECRET, now: NOW };
  },
  body_not_raw: async (b) => {
    const body = envelopeBody();
    return { body: JSON.parse(body) as string, headers: await signedHeaders(b, { body }), secret: SECRET, now: NOW };
  },
  invalid_envelope: async (b) => {
    const body = '{"hello":"world"}';
    return { body, headers: await signedHeaders(b, { body }), secret: SECRET, now: NOW };
  },
} satisfies Record<VerificationErrorCode, (backend: Backend) => Promise<VerifyInput>>;

test('every code in the error table has a scenario, and nothing else does', () => {
  assert.deepEqual(Object.keys(SCENARIOS).sort(), Object.keys(VERIFICATION_ERRORS).sort());
});

for (const backend of BACKENDS) {
  for (const [code, scenario] of Object.entries(SCENARIOS) as [VerificationErrorCode, (b: Backend) => Promise<VerifyInput>][]) {
    test(`${backend.name}: ${code} is reached, with the status of the table`, async () => {
      const error = await backend.verify(await scenario(backend)).then(
        () => assert.fail('expected a rejection'),
        (e: unknown) => e,
      );
      assert.ok(error instanceof WebhookVerificationError);
      assert.ok(error instanceof Error);
      assert.equal(error.name, 'WebhookVerificationError');
      assert.equal(error.code, code);
      assert.equal(error.status, VERIFICATION_ERRORS[code].status);
      assert.ok(error.message.length > 20);
    });
  }

  test(`${backend.name}: missing_header says which header`, async () => {
    const body = envelopeBody();
    const signed = await signedHeaders(backend, { body });
    const cases = [
      [{ 'X-Service-Signature': signed['X-Service-Signature'] }, 'X-Service-Timestamp'],
      [{ 'X-Service-Timestamp': signed['X-Service-Timestamp'] }, 'X-Service-Signature'],
      [{ ...signed, 'X-Service-Signature': '' }, 'X-Service-Signature'],
      [{ ...signed, 'X-Service-Timestamp': [] }, 'X-Service-Timestamp'],
      [{ ...signed, 'X-Service-Timestamp': undefined }, 'X-Service-Timestamp'],
    ] as const;
    for (const [headers, header] of cases) {
      await assert.rejects(backend.verify({ body, headers, secret: SECRET, now: NOW }), (error: WebhookVerificationError) => {
        assert.equal(error.code, 'missing_header');
        assert.equal(error.header, header);
        assert.match(error.message, new RegExp(header));
        return true;
      });
    }
    // With neither header, the likeliest cause is passing the wrong object.
    await assert.rejects(backend.verify({ body, headers: {}, secret: SECRET, now: NOW }), (error: WebhookVerificationError) => {
      assert.equal(error.code, 'missing_header');
      assert.match(error.message, /req\.headers/);
      return true;
    });
  });

  test(`${backend.name}: mistakes in the call are TypeError or RangeError, not verification failures`, async () => {
    const body = envelopeBody();
    const headers = await signedHeaders(backend, { body });
    const base = { body, headers, now: NOW };
    const typeErrors: unknown[] = [
      { ...base },
      { ...base, secret: '' },
      { ...base, secret: undefined },
      { ...base, secrets: [] },
      { ...base, secrets: [SECRET, ''] },
      { ...base, secrets: SECRET },
      { ...base, secret: SECRET, secrets: [SECRET] },
      { ...base, secret: `${SECRET}\n` },
      { ...base, secret: SECRET, now: new Date('not a date') },
      { ...base, secret: SECRET, now: '1700000000' },
      { ...base, secret: SECRET, headers: undefined },
      { ...base, secret: SECRET, headers: 'x-service-timestamp: 1' },
      undefined,
    ];
    for (const input of typeErrors) {
      await assert.rejects(backend.verify(input as VerifyInput), TypeError, JSON.stringify(input));
    }
    const rangeErrors: unknown[] = [
      { ...base, secret: SECRET, toleranceSeconds: 301 },
      { ...base, secret: SECRET, toleranceSeconds: 3600 },
      { ...base, secret: SECRET, toleranceSeconds: -1 },
      { ...base, secret: SECRET, toleranceSeconds: Number.NaN },
      { ...base, secret: SECRET, toleranceSeconds: Number.POSITIVE_INFINITY },
      { ...base, secret: SECRET, now: NOW * 1000 }, // milliseconds by mistake
      { ...base, secret: SECRET, now: -1 },
    ];
    for (const input of rangeErrors) {
      await assert.rejects(backend.verify(input as VerifyInput), RangeError, JSON.stringify(input));
    }
  });

  test(`${backend.name}: a tolerance wider than 300 s is refused with a message that says why`, async () => {
    const body = envelopeBody();
    const headers = await signedHeaders(backend, { body });
    await assert.rejects(backend.verify({ body, headers, secret: SECRET, now: NOW, toleranceSeconds: 600 }), {
      name: 'RangeError',
      message: /toleranceSeconds must be a number from 0 to 300; got 600\. .*at most 300 s \(5 minutes\)/,
    });
  });
}

test('instanceof works by brand, so an error from another copy of the package still matches', () => {
  const error = new WebhookVerificationError('no_matching_signature', 'x');
  assert.ok(error instanceof WebhookVerificationError);
  const fromAnotherCopy = Object.assign(new Error('x'), { [Symbol.for('@herald/verify.WebhookVerificationError')]: true });
  assert.ok(fromAnotherCopy instanceof WebhookVerificationError);
  assert.ok(!(new Error('x') instanceof WebhookVerificationError));
  assert.ok(!((null as unknown) instanceof WebhookVerificationError));
  assert.ok(!({ code: 'no_matching_signature' } instanceof WebhookVerificationError));
});

test('a cause is kept for errors that have one', async () => {
  const body = 'not json';
  const backend = BACKENDS[0]!;
  await assert.rejects(backend.verify({ body, headers: await signedHeaders(backend, { body }), secret: SECRET, now: NOW }), (e: WebhookVerificationError) => {
    assert.equal(e.code, 'invalid_envelope');
    assert.ok(e.cause instanceof SyntaxError);
    return true;
  });
});

test('the README error table lists every code with its status', () => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  for (const [code, { status }] of Object.entries(VERIFICATION_ERRORS)) {
    assert.match(readme, new RegExp(`^\\| \`${code}\` \\| ${status} \\|`, 'm'), `README is missing a row for ${code}`);
  }
});

test('error messages never echo a long untrusted header value', async () => {
  const backend = BACKENDS[0]!;
  const body = envelopeBody();
  const long = `v1=${'z'.repeat(500)}\n[fake log line]`;
  await assert.rejects(
    backend.verify({ body, headers: { ...(await signedHeaders(backend, { body })), 'X-Service-Signature': long }, secret: SECRET, now: NOW }),
    (e: WebhookVerificationError) => {
      assert.equal(e.code, 'malformed_signature');
      assert.doesNotMatch(e.message, /zzzz|fake log line/);
      return isCode('malformed_signature')(e);
    },
  );
});
