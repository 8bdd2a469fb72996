import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { sign } from '../src/index.ts';
import { signSync } from '../src/node.ts';
import { loadVectors } from './vectors.ts';

for (const v of loadVectors()) {
  test(`vector: ${v.name} (Web Crypto and node:crypto agree with Python's hmac)`, async () => {
    assert.equal(await sign({ body: v.body, secret: v.secret, timestamp: v.timestamp }), v.signature);
    assert.equal(signSync({ body: v.body, secret: v.secret, timestamp: v.timestamp }), v.signature);
  });
}

test('vectors agree with openssl dgst, computed now', () => {
  for (const v of loadVectors()) {
    const input = Buffer.concat([Buffer.from(`${v.timestamp}.`), v.body]);
    const out = execFileSync('openssl', ['dgst', '-sha256', '-hmac', v.secret, '-r'], { input }).toString();
    assert.equal(`v1=${out.split(' ')[0]}`, v.signature, v.name);
  }
});

test('a string body signs the same as its UTF-8 bytes', async () => {
  const body = '{"message":"Température"}';
  assert.equal(
    await sign({ body, secret: 'whsec_x', timestamp: 5 }),
    await sign({ body: new TextEncoder().encode(body), secret: 'whsec_x', timestamp: 5 }),
  );
});

test('an empty secret is refused with a message that says what to pass', () => {
  assert.throws(() => signSync({ body: '', secret: '', timestamp: 1 }), /non-empty signing secret/);
});

test('signSync hashes the body in place: every body shape and a non-ASCII secret sign as Web Crypto does', async () => {
  const text = '{"message":"Température","n":1}';
  const bytes = new TextEncoder().encode(text);
  const padded = new Uint8Array(bytes.length + 8);
  padded.set(bytes, 4);
  const shapes: Array<[string, string | Uint8Array | ArrayBuffer]> = [
    ['string', text],
    ['Uint8Array', bytes],
    ['Buffer', Buffer.from(text)],
    ['ArrayBuffer', bytes.slice().buffer],
    ['a view into a larger buffer', padded.subarray(4, 4 + bytes.length)],
  ];
  for (const secret of ['whsec_x', 'whsec_clé-ünïcödé']) {
    const expected = await sign({ body: bytes, secret, timestamp: 1700000000 });
    for (const [name, body] of shapes) assert.equal(signSync({ body, secret, timestamp: 1700000000 }), expected, `${name}, secret ${secret}`);
  }
});

test('a bad body and a bad secret together: both signers report the body first, as they always have', async () => {
  const body = -1 as unknown as string;
  assert.throws(() => signSync({ body, secret: '', timestamp: 1 }), RangeError);
  await assert.rejects(sign({ body, secret: '', timestamp: 1 }), RangeError);
});
