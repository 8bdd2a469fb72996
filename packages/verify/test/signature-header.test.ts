import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BACKENDS, envelopeBody, isCode, NOW, SECRET, signedHeaders } from './backends.ts';

for (const backend of BACKENDS) {
  test(`${backend.name}: signatures of the wrong shape are malformed_signature`, async () => {
    const body = envelopeBody();
    const signed = await signedHeaders(backend, { body });
    const good = signed['X-Service-Signature']!;
    const hex = good.slice(3);
    const malformed = [
      `v1=${hex.slice(0, 63)}`, // 63 digits
      `v1=${hex}0`, // 65 digits
      `v1=${hex.slice(0, 62)}`, // 31 bytes
      `v1=${hex}${hex}`, // 64 bytes
      `v1=${hex.slice(0, 63)}g`, // non-hex
      `v1=${hex.slice(0, 63)}-`,
      `v1=${hex.toUpperCase()}`, // uppercase is refused: Herald sends lowercase
      `V1=${hex}`,
      `v1 =${hex}`,
      `v1=`,
      'v1',
      hex, // no prefix
      `sha256=${hex}`,
      `v1=${Buffer.from(hex, 'hex').toString('base64')}`, // base64 instead of hex
      'v2=c29tZXRoaW5nLW5ldw==', // only other versions
      `${good} v1=${hex.slice(0, 10)}`, // one good, one malformed v1
      `${good} garbage`,
      ' ', ',',
    ];
    for (const signature of malformed) {
      const headers = { ...signed, 'X-Service-Signature': signature };
      await assert.rejects(backend.verify({ body, headers, secret: SECRET, now: NOW }), (error: Error) => {
        isCode('malformed_signature')(error);
        assert.equal((error as { header?: string }).header, 'X-Service-Signature');
        return true;
      }, signature);
    }
  });

  test(`${backend.name}: the uppercase message says why`, async () => {
    const body = envelopeBody();
    const signed = await signedHeaders(backend, { body });
    const headers = { ...signed, 'X-Service-Signature': `v1=${signed['X-Service-Signature']!.slice(3).toUpperCase()}` };
    await assert.rejects(backend.verify({ body, headers, secret: SECRET, now: NOW }), { message: /lowercase/ });
  });

  test(`${backend.name}: a well-formed signature that differs in any one byte is no_matching_signature`, async () => {
    const body = envelopeBody();
    const signed = await signedHeaders(backend, { body });
    const digest = Buffer.from(signed['X-Service-Signature']!.slice(3), 'hex');
    for (let i = 0; i < digest.length; i++) {
      const altered = Buffer.from(digest);
      altered[i]! ^= 0x01;
      const headers = { ...signed, 'X-Service-Signature': `v1=${altered.toString('hex')}` };
      await assert.rejects(backend.verify({ body, headers, secret: SECRET, now: NOW }), isCode('no_matching_signature'));
    }
  });
}
