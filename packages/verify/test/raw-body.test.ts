import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { RawBody } from '../src/index.ts';
import { BACKENDS, envelopeBody, isCode, NOW, SECRET, signedHeaders } from './backends.ts';

/** The message must tell the user how to get the raw body in the common frameworks. */
function tellsHowToGetTheRawBody(error: Error): true {
  isCode('body_not_raw')(error);
  assert.equal((error as { status?: number }).status, 500);
  assert.match(error.message, /express\.raw\(\{ type: "application\/json" \}\)/);
  assert.match(error.message, /await request\.text\(\)/);
  return true;
}

for (const backend of BACKENDS) {
  test(`${backend.name}: a parsed object, undefined, null or a number is body_not_raw, whatever the headers`, async () => {
    const body = envelopeBody();
    const signed = await signedHeaders(backend, { body });
    for (const notRaw of [JSON.parse(body), {}, [], undefined, null, 42, true, new Map()]) {
      for (const headers of [signed, {}]) {
        await assert.rejects(
          backend.verify({ body: notRaw as RawBody, headers, secret: SECRET, now: NOW }),
          tellsHowToGetTheRawBody,
        );
      }
    }
  });

  test(`${backend.name}: the message names the likely cause`, async () => {
    const body = envelopeBody();
    const headers = await signedHeaders(backend, { body });
    const cases: [unknown, RegExp][] = [
      [JSON.parse(body), /parsed object: a JSON body parser ran before verify/],
      [{}, /empty object: a body parser ran but did not match/],
      [undefined, /undefined: nothing read the request body/],
    ];
    for (const [notRaw, cause] of cases) {
      await assert.rejects(backend.verify({ body: notRaw as RawBody, headers, secret: SECRET, now: NOW }), { message: cause });
    }
  });

  test(`${backend.name}: a re-serialised string body that fails the signature is body_not_raw`, async () => {
    const body = envelopeBody();
    const headers = await signedHeaders(backend, { body });
    const reserialised = [
      JSON.stringify(JSON.parse(body), null, 2), // pretty-printed
      `${body}\n`,
      '[object Object]', // String(req.body)
    ];
    for (const altered of reserialised) {
      await assert.rejects(backend.verify({ body: altered, headers, secret: SECRET, now: NOW }), tellsHowToGetTheRawBody);
    }
  });

  test(`${backend.name}: the re-serialisation check never rejects a request whose signature matches`, async () => {
    const body = '{ "id": "e1", "type": "x.y", "created_at": "2026-01-01T00:00:00.000Z", "data": {} }\n';
    const event = await backend.verify({ body, headers: await signedHeaders(backend, { body }), secret: SECRET, now: NOW });
    assert.equal(event.id, 'e1');
  });

  test(`${backend.name}: a compact body under the wrong secret is a plain mismatch, not a raw-body problem`, async () => {
    const body = envelopeBody();
    const headers = await signedHeaders(backend, { body, secret: 'whsec_other' });
    await assert.rejects(backend.verify({ body, headers, secret: SECRET, now: NOW }), (error: Error) => {
      isCode('no_matching_signature')(error);
      assert.match(error.message, /whsec_/);
      return true;
    });
    // Bytes are taken as raw: a mismatch there is a mismatch.
    const pretty = Buffer.from(JSON.stringify(JSON.parse(body), null, 2));
    await assert.rejects(backend.verify({ body: pretty, headers, secret: SECRET, now: NOW }), isCode('no_matching_signature'));
  });
}
