import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import {
  apiKeyPrefix,
  decryptSecret,
  encryptSecret,
  generateApiKey,
  generateSigningSecret,
  hashApiKey,
  hashesEqual,
  maskSecret,
} from '../src/core/secrets.ts';

const KEY = Buffer.alloc(32, 3);
const OTHER_KEY = Buffer.alloc(32, 4);

describe('signing secrets at rest (AES-256-GCM, endpoint id as associated data)', () => {
  test('round trip', () => {
    const secret = generateSigningSecret();
    const id = randomUUID();
    assert.equal(decryptSecret(KEY, encryptSecret(KEY, secret, id), id), secret);
  });

  test('the ciphertext holds no trace of the secret and differs every time (fresh IV)', () => {
    const secret = generateSigningSecret();
    const id = randomUUID();
    const a = encryptSecret(KEY, secret, id);
    const b = encryptSecret(KEY, secret, id);
    assert.ok(!a.equals(b));
    for (const sealed of [a, b]) {
      assert.equal(sealed[0], 1, 'format version');
      assert.equal(sealed.length, 1 + 12 + 16 + Buffer.byteLength(secret));
      assert.ok(!sealed.includes(Buffer.from(secret)));
      assert.ok(!sealed.includes(Buffer.from(secret.slice(6))));
      assert.ok(!sealed.toString('base64').includes(secret.slice(6)));
    }
  });

  test('bound to its endpoint: a ciphertext copied to another row does not decrypt', () => {
    const secret = generateSigningSecret();
    const sealed = encryptSecret(KEY, secret, randomUUID());
    assert.throws(() => decryptSecret(KEY, sealed, randomUUID()), /cannot decrypt/);
  });

  test('another operator key does not decrypt, and the message points at HERALD_ENCRYPTION_KEY', () => {
    const id = randomUUID();
    const sealed = encryptSecret(KEY, generateSigningSecret(), id);
    assert.throws(() => decryptSecret(OTHER_KEY, sealed, id), /HERALD_ENCRYPTION_KEY/);
  });

  test('any changed byte is detected', () => {
    const id = randomUUID();
    const sealed = encryptSecret(KEY, generateSigningSecret(), id);
    for (const at of [1, 13, 29, sealed.length - 1]) {
      const tampered = Buffer.from(sealed);
      tampered[at]! ^= 0x01;
      assert.throws(() => decryptSecret(KEY, tampered, id), /cannot decrypt/, `byte ${at}`);
    }
    const unknownVersion = Buffer.from(sealed);
    unknownVersion[0] = 9;
    assert.throws(() => decryptSecret(KEY, unknownVersion, id), /unknown encryption format/);
  });
});

describe('signing secret format', () => {
  test('whsec_ + base64url of 32 random bytes, masked as prefix and four characters', () => {
    const secret = generateSigningSecret();
    assert.match(secret, /^whsec_[A-Za-z0-9_-]{43}$/);
    assert.equal(Buffer.from(secret.slice(6), 'base64url').length, 32);
    assert.notEqual(generateSigningSecret(), secret);
    const hint = maskSecret(secret);
    assert.equal(hint, `${secret.slice(0, 10)}…`);
    assert.ok(!hint.includes(secret.slice(10, 14)));
  });
});

describe('API keys (stored as SHA-256 only)', () => {
  test('hk_<8>_<32>, the prefix is recoverable from the key, the hash is SHA-256 of the whole key', () => {
    const { key, prefix, hash } = generateApiKey();
    assert.match(key, /^hk_[A-Za-z0-9]{8}_[A-Za-z0-9_-]{32}$/);
    assert.equal(apiKeyPrefix(key), prefix);
    assert.ok(key.startsWith(`${prefix}_`));
    assert.ok(hash.equals(createHash('sha256').update(key).digest()));
    assert.ok(hashesEqual(hash, hashApiKey(key)));
    // A different last character: always "x" left a key that ended in "x" unchanged (one in 64).
    assert.ok(!hashesEqual(hash, hashApiKey(`${key.slice(0, -1)}${key.endsWith('x') ? 'y' : 'x'}`)));
    assert.ok(!hashesEqual(hash, hash.subarray(1)), 'different lengths are unequal, not an exception');
  });

  test('anything not shaped like a key has no prefix', () => {
    const { key } = generateApiKey();
    for (const bad of ['', 'hk_', key.slice(0, -1), `${key}x`, key.replace('hk_', 'sk_'), `Bearer ${key}`]) {
      assert.equal(apiKeyPrefix(bad), undefined, bad);
    }
  });
});
