import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { buildRequestHeaders } from '../src/core/request-headers.ts';
import { opensslSignature } from './helpers/independent-hmac.ts';

/** The one file of test vectors, shared with @herald/verify's tests (generated with Python's hmac). */
const { vectors } = JSON.parse(readFileSync(new URL('../../verify/test/vectors.json', import.meta.url), 'utf8')) as {
  vectors: Array<{ name: string; secret: string; timestamp: number; body_base64: string; signature: string }>;
};

for (const v of vectors) {
  test(`the dispatcher's request headers carry the vector's signature: ${v.name}`, () => {
    const body = Buffer.from(v.body_base64, 'base64');
    const headers = buildRequestHeaders({ eventType: 'alarm.created', eventId: 'e', attemptId: 'a', timestamp: v.timestamp, body, secret: v.secret });
    assert.equal(headers['X-Service-Signature'], v.signature);
    assert.equal(headers['X-Service-Timestamp'], String(v.timestamp));
    assert.equal(opensslSignature(v.secret, String(v.timestamp), body), v.signature, 'OpenSSL agrees');
  });
}
