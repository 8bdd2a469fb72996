import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingHttpHeaders } from 'node:http';
import { verifySync } from '../src/node.ts';
import { BACKENDS, envelopeBody, isCode, NOW, SECRET, signedHeaders } from './backends.ts';
import { loadVectors } from './vectors.ts';

for (const backend of BACKENDS) {
  const verify = backend.verify;

  test(`${backend.name}: a signed request verifies and returns its envelope`, async () => {
    const body = envelopeBody();
    const event = await verify({ body, headers: await signedHeaders(backend, { body }), secret: SECRET, now: NOW });
    assert.deepEqual(event, JSON.parse(body));
  });

  test(`${backend.name}: the body may be a string, Buffer, Uint8Array, ArrayBuffer or DataView`, async () => {
    const text = envelopeBody();
    const headers = await signedHeaders(backend, { body: text });
    const buffer = Buffer.from(text);
    const bytes = new TextEncoder().encode(text);
    // A view into the middle of a larger buffer, as pooled Buffers often are.
    const padded = new Uint8Array(bytes.length + 8);
    padded.set(bytes, 4);
    for (const body of [text, buffer, bytes, bytes.buffer, padded.subarray(4, 4 + bytes.length), new DataView(bytes.buffer)]) {
      const event = await verify({ body: body as Uint8Array, headers, secret: SECRET, now: NOW });
      assert.equal(event.type, 'alarm.created');
    }
  });

  test(`${backend.name}: headers may be a Fetch Headers, Node IncomingHttpHeaders or a plain object in any case`, async () => {
    const body = envelopeBody();
    const signed = await signedHeaders(backend, { body });
    const timestamp = signed['X-Service-Timestamp']!;
    const signature = signed['X-Service-Signature']!;

    const fetchHeaders = new Headers({ 'content-type': 'application/json; charset=utf-8', ...signed });
    const incoming: IncomingHttpHeaders = {
      'content-type': 'application/json; charset=utf-8',
      'x-service-timestamp': timestamp,
      'x-service-signature': signature,
    };
    const incomingWithArray = { 'x-service-timestamp': [timestamp], 'x-service-signature': [signature] };
    const shouting = { 'X-SERVICE-TIMESTAMP': timestamp, 'x-Service-Signature': signature };
    const numeric = { 'x-service-timestamp': Number(timestamp), 'x-service-signature': signature };

    for (const headers of [fetchHeaders, incoming, incomingWithArray, shouting, numeric]) {
      assert.equal((await verify({ body, headers, secret: SECRET, now: NOW })).type, 'alarm.created');
    }
  });

  test(`${backend.name}: headers are read from own keys only, never from a prototype`, async () => {
    const body = envelopeBody();
    const headers = Object.create(await signedHeaders(backend, { body })) as Record<string, string>;
    await assert.rejects(verify({ body, headers, secret: SECRET, now: NOW }), isCode('missing_header'));
  });

  test(`${backend.name}: rotation — with both secrets, a request signed by either passes, and by neither fails`, async () => {
    const body = envelopeBody();
    const oldSecret = 'whsec_old_old_old';
    const newSecret = 'whsec_new_new_new';
    for (const secret of [oldSecret, newSecret]) {
      const headers = await signedHeaders(backend, { body, secret });
      const event = await verify({ body, headers, secrets: [newSecret, oldSecret], now: NOW });
      assert.equal(event.id, JSON.parse(body).id);
    }
    const stranger = await signedHeaders(backend, { body, secret: 'whsec_someone_else' });
    await assert.rejects(
      verify({ body, headers: stranger, secrets: [newSecret, oldSecret], now: NOW }),
      isCode('no_matching_signature'),
    );
  });

  test(`${backend.name}: several signatures in one header — any v1 match passes, other versions are skipped`, async () => {
    const body = envelopeBody();
    const signed = await signedHeaders(backend, { body });
    const good = signed['X-Service-Signature']!;
    const wrong = `v1=${'0'.repeat(64)}`;
    const future = 'v2=c29tZXRoaW5nLW5ldw==';
    const timestamp = signed['X-Service-Timestamp']!;
    for (const signature of [
      `${wrong} ${good}`,
      `${good} ${wrong}`,
      `${future} ${good}`,
      `${wrong}  ${good}`, // several spaces
      `${wrong}, ${good}`, // how Node and Fetch join a repeated header
      [wrong, good],
    ]) {
      const headers = { 'X-Service-Timestamp': timestamp, 'X-Service-Signature': signature };
      assert.equal((await verify({ body, headers, secret: SECRET, now: NOW })).type, 'alarm.created', String(signature));
    }
  });

  test(`${backend.name}: now may be a Date or Unix seconds; fractions are floored`, async () => {
    const body = envelopeBody();
    const headers = await signedHeaders(backend, { body, timestamp: NOW });
    for (const now of [new Date(NOW * 1000), NOW, NOW + 300.9, new Date((NOW + 300) * 1000 + 999)]) {
      await verify({ body, headers, secret: SECRET, now });
    }
  });

  test(`${backend.name}: the signed timestamp is the header text as received (leading zeros included)`, async () => {
    const body = envelopeBody();
    const timestamp = `0${NOW}`;
    const headers = await signedHeaders(backend, { body, timestamp });
    await verify({ body, headers, secret: SECRET, now: NOW });
    const renumbered = { ...headers, 'X-Service-Timestamp': String(NOW) };
    await assert.rejects(verify({ body, headers: renumbered, secret: SECRET, now: NOW }), isCode('no_matching_signature'));
  });

  test(`${backend.name}: fields beyond the four are kept, so a later envelope can grow`, async () => {
    const body = envelopeBody({ api_version: '2027-01-01' });
    const event = await verify({ body, headers: await signedHeaders(backend, { body }), secret: SECRET, now: NOW });
    assert.equal((event as unknown as Record<string, unknown>).api_version, '2027-01-01');
  });

  for (const v of loadVectors()) {
    test(`${backend.name}: shared vector "${v.name}" passes the signature check`, async () => {
      const headers = { 'X-Service-Timestamp': String(v.timestamp), 'X-Service-Signature': v.signature };
      const input = { body: v.body, headers, secret: v.secret, now: v.timestamp };
      let envelope: unknown;
      try {
        envelope = JSON.parse(Buffer.from(v.body).toString('utf8'));
      } catch {
        // not JSON
      }
      const isEnvelope = typeof envelope === 'object' && envelope !== null && 'data' in envelope;
      if (isEnvelope) {
        assert.deepEqual(await verify(input), envelope);
      } else {
        // invalid_envelope comes only after a signature matched.
        await assert.rejects(verify(input), isCode('invalid_envelope'));
      }
      const wrongSecret = { ...input, secret: `${v.secret}x` };
      await assert.rejects(verify(wrongSecret), isCode('no_matching_signature'));
    });
  }
}

test('verifySync returns the envelope synchronously and throws synchronously', async () => {
  const body = envelopeBody();
  const headers = await signedHeaders(BACKENDS[0]!, { body });
  const event = verifySync({ body, headers, secret: SECRET, now: NOW });
  assert.equal(typeof (event as { then?: unknown }).then, 'undefined');
  assert.equal(event.type, 'alarm.created');
  assert.throws(() => verifySync({ body, headers, secret: 'whsec_other', now: NOW }), isCode('no_matching_signature'));
});

test('without now, verify uses the system clock', async () => {
  const body = envelopeBody();
  const headers = await signedHeaders(BACKENDS[0]!, { body, timestamp: Math.floor(Date.now() / 1000) });
  for (const backend of BACKENDS) await backend.verify({ body, headers, secret: SECRET });
});
