import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BACKENDS, envelopeBody, isCode, NOW, SECRET, signedHeaders } from './backends.ts';

const NOT_ENVELOPES: [string, string | Uint8Array][] = [
  ['empty body', ''],
  ['not JSON', 'hello'],
  ['truncated JSON', envelopeBody().slice(0, -1)],
  ['invalid UTF-8', new Uint8Array([0x7b, 0x22, 0x78, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d])],
  ['an array', '[]'],
  ['null', 'null'],
  ['a number', '1'],
  ['a string', '"alarm.created"'],
  ['no id', JSON.stringify({ type: 'alarm.created', created_at: '2026-01-01T00:00:00.000Z', data: {} })],
  ['numeric id', envelopeBody({ id: 7 })],
  ['empty type', envelopeBody({ type: '' })],
  ['created_at a number', envelopeBody({ created_at: 1700000000 })],
  ['no data', envelopeBody({ data: undefined })],
  ['null data', envelopeBody({ data: null })],
  ['array data', envelopeBody({ data: [] })],
  ['string data', envelopeBody({ data: 'x' })],
];

for (const backend of BACKENDS) {
  for (const [name, body] of NOT_ENVELOPES) {
    test(`${backend.name}: a correctly signed body that is not an envelope (${name}) is invalid_envelope`, async () => {
      const headers = await signedHeaders(backend, { body });
      await assert.rejects(backend.verify({ body, headers, secret: SECRET, now: NOW }), (error: Error) => {
        isCode('invalid_envelope')(error);
        assert.match(error.message, /signature is valid/);
        return true;
      });
    });
  }

  test(`${backend.name}: an unsigned body is never parsed: a mismatch wins over a bad envelope`, async () => {
    const body = 'not json';
    const headers = await signedHeaders(backend, { body, secret: 'whsec_other' });
    await assert.rejects(backend.verify({ body, headers, secret: SECRET, now: NOW }), isCode('no_matching_signature'));
  });

  test(`${backend.name}: non-ASCII text survives, given as string or as bytes`, async () => {
    const body = envelopeBody({ data: { message: 'Température élevée — 温度 🚚' } });
    const headers = await signedHeaders(backend, { body });
    for (const raw of [body, Buffer.from(body)]) {
      const event = await backend.verify({ body: raw, headers, secret: SECRET, now: NOW });
      assert.deepEqual(event.data, { message: 'Température élevée — 温度 🚚' });
    }
  });
}
