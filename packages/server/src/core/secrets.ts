import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Signing secrets: `whsec_` + base64url of 32 random bytes. The HMAC key is the
 * UTF-8 bytes of the whole string, as shown to the user, so receivers need no decoding.
 */
export function generateSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('base64url')}`;
}

/**
 * How an endpoint's requests are signed: Herald's own headers
 * (X-Service-Signature, keyed by the secret's text), or the Standard Webhooks
 * specification's (webhook-signature, keyed by the bytes the secret's
 * base64 part encodes).
 */
export const SIGNATURE_SCHEMES = ['herald', 'standard-webhooks'] as const;
export type SignatureScheme = (typeof SIGNATURE_SCHEMES)[number];

/**
 * Standard Webhooks secrets: `whsec_` + standard base64 (with `+`, `/` and
 * padding) of 32 random bytes, the form that specification's libraries
 * decode into the HMAC key.
 */
export function generateStandardWebhooksSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** A new secret of the form the scheme keys its HMAC with. */
export function generateSecretFor(scheme: SignatureScheme): string {
  return scheme === 'standard-webhooks' ? generateStandardWebhooksSecret() : generateSigningSecret();
}

/** The masked form shown after the one reveal: prefix and the first four characters. */
export function maskSecret(secret: string): string {
  return `${secret.slice(0, 10)}…`;
}

const FORMAT_V1 = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * AES-256-GCM under the operator key. Layout: version (1) | iv (12) | tag (16) |
 * ciphertext. `context` (the endpoint id) is bound as associated data, so a
 * ciphertext copied onto another row does not decrypt.
 */
export function encryptSecret(key: Buffer, plaintext: string, context: string): Buffer {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(context));
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return Buffer.concat([Buffer.from([FORMAT_V1]), iv, cipher.getAuthTag(), body]);
}

export function decryptSecret(key: Buffer, sealed: Buffer, context: string): string {
  if (sealed[0] !== FORMAT_V1) throw new Error('signing secret: unknown encryption format');
  const iv = sealed.subarray(1, 1 + IV_BYTES);
  const tag = sealed.subarray(1 + IV_BYTES, 1 + IV_BYTES + TAG_BYTES);
  const decipher = createDecipheriv('aes-256-gcm', key, iv);
  decipher.setAAD(Buffer.from(context));
  decipher.setAuthTag(tag);
  try {
    return Buffer.concat([decipher.update(sealed.subarray(1 + IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  } catch (cause) {
    throw new Error('signing secret: cannot decrypt; is HERALD_ENCRYPTION_KEY the key this database was written with?', { cause });
  }
}

/**
 * Names an operator key without revealing it: HMAC-SHA256 of a fixed label
 * under the key. The database keeps it, so Herald can tell at start whether
 * it was given the key its signing secrets are encrypted under.
 */
export function keyFingerprint(key: Buffer): Buffer {
  return createHmac('sha256', key).update('herald operator key fingerprint v1').digest();
}

/**
 * API keys: `hk_<8 id chars>_<secret>`. The part before the second underscore
 * is the visible prefix (stored, indexed); only SHA-256 of the whole key is
 * stored. A key has 192 random bits, so a fast hash is the right tool here.
 */
export function generateApiKey(): { key: string; prefix: string; hash: Buffer } {
  const prefix = `hk_${randomBytes(6).toString('base64url').replace(/[-_]/g, 'x')}`;
  const key = `${prefix}_${randomBytes(24).toString('base64url')}`;
  return { key, prefix, hash: hashApiKey(key) };
}

export function hashApiKey(key: string): Buffer {
  return createHash('sha256').update(key).digest();
}

export function apiKeyPrefix(key: string): string | undefined {
  const match = /^(hk_[A-Za-z0-9]{8})_[A-Za-z0-9_-]{32}$/.exec(key);
  return match?.[1];
}

export function hashesEqual(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}
