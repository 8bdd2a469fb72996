import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseTimestamp } from '../src/timestamp.ts';
import { BACKENDS, envelopeBody, isCode, NOW, SECRET, signedHeaders } from './backends.ts';

for (const backend of BACKENDS) {
  test(`${backend.name}: |now - t| = 300 is accepted and 301 rejected, in both directions`, async () => {
    const body = envelopeBody();
    for (const offset of [-300, 0, 300]) {
      const headers = await signedHeaders(backend, { body, timestamp: NOW + offset });
      await backend.verify({ body, headers, secret: SECRET, now: NOW });
    }
    const old = await signedHeaders(backend, { body, timestamp: NOW - 301 });
    await assert.rejects(backend.verify({ body, headers: old, secret: SECRET, now: NOW }), isCode('timestamp_too_old'));
    const future = await signedHeaders(backend, { body, timestamp: NOW + 301 });
    await assert.rejects(backend.verify({ body, headers: future, secret: SECRET, now: NOW }), isCode('timestamp_in_future'));
  });

  test(`${backend.name}: a narrower tolerance moves both boundaries`, async () => {
    const body = envelopeBody();
    for (const [offset, code] of [[-61, 'timestamp_too_old'], [61, 'timestamp_in_future']] as const) {
      const headers = await signedHeaders(backend, { body, timestamp: NOW + offset });
      await assert.rejects(backend.verify({ body, headers, secret: SECRET, now: NOW, toleranceSeconds: 60 }), isCode(code));
      await backend.verify({ body, headers, secret: SECRET, now: NOW + Math.sign(offset), toleranceSeconds: 60 });
    }
    const exact = await signedHeaders(backend, { body, timestamp: NOW });
    await backend.verify({ body, headers: exact, secret: SECRET, now: NOW, toleranceSeconds: 0 });
    await assert.rejects(
      backend.verify({ body, headers: exact, secret: SECRET, now: NOW + 1, toleranceSeconds: 0 }),
      isCode('timestamp_too_old'),
    );
  });

  test(`${backend.name}: an old timestamp is rejected even with a valid signature (no replay)`, async () => {
    const body = envelopeBody();
    const headers = await signedHeaders(backend, { body, timestamp: NOW });
    await backend.verify({ body, headers, secret: SECRET, now: NOW });
    await assert.rejects(backend.verify({ body, headers, secret: SECRET, now: NOW + 3600 }), (e: Error) => {
      isCode('timestamp_too_old')(e);
      assert.match(e.message, /3600 s in the past, beyond the 300 s tolerance/);
      return true;
    });
  });

  test(`${backend.name}: malformed timestamps are rejected before any signature check`, async () => {
    const body = envelopeBody();
    const valid = await signedHeaders(backend, { body });
    const malformed = [
      '+1700000000', '-1700000000', '1.7e9', '1700000000e0', '1700000000.0', '1700000000.5',
      ' 1700000000', '1700000000 ', '17000 00000', '1700000000abc', 'abc', '0x6553F100', '1_700_000_000',
      '1,700,000,000', 'Infinity', 'NaN', '１７００００００００', '١٧٠٠٠٠٠٠٠٠', '1700000000\n', '\t1700000000',
      '1234567890123', '0001700000000', `${NOW}, ${NOW}`,
    ];
    for (const timestamp of malformed) {
      // Signed over the malformed text too, so only the format can be the reason.
      const signature = await backend.sign({ body, secret: SECRET, timestamp });
      const headers = { 'X-Service-Timestamp': timestamp, 'X-Service-Signature': signature };
      await assert.rejects(backend.verify({ body, headers, secret: SECRET, now: NOW }), isCode('malformed_timestamp'), JSON.stringify(timestamp));
    }
    const twice = { ...valid, 'X-Service-Timestamp': [String(NOW), String(NOW)] };
    await assert.rejects(backend.verify({ body, headers: twice, secret: SECRET, now: NOW }), isCode('malformed_timestamp'));
  });
}

test('parseTimestamp accepts 1 to 12 ASCII digits, leading zeros included', () => {
  assert.deepEqual(parseTimestamp(['0']), { text: '0', seconds: 0 });
  assert.deepEqual(parseTimestamp(['999999999999']), { text: '999999999999', seconds: 999999999999 });
  assert.deepEqual(parseTimestamp(['01700000000']), { text: '01700000000', seconds: 1700000000 });
  assert.throws(() => parseTimestamp(['1000000000000']), isCode('malformed_timestamp'));
});

test('a well-formed 12-digit timestamp far ahead is "in the future", not malformed', async () => {
  const backend = BACKENDS[0]!;
  const body = envelopeBody();
  const headers = await signedHeaders(backend, { body, timestamp: '999999999999' });
  await assert.rejects(backend.verify({ body, headers, secret: SECRET, now: NOW }), isCode('timestamp_in_future'));
});
