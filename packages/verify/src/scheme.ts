/**
 * Herald's signature scheme, in one place: what is signed and how the
 * header value is written. Both HMAC back ends (Web Crypto and node:crypto)
 * build on these functions, so there is exactly one definition of the signed
 * string.
 *
 * Signed string: `<timestamp>.<raw body bytes>`.
 * Header value:  `v1=` + lowercase hex of HMAC-SHA256(key = UTF-8 bytes of the secret).
 */

/** The version prefix of `X-Service-Signature`. */
export const SIGNATURE_PREFIX = 'v1=';

/** Header names exactly as Herald sends them. */
export const HEADER = {
  contentType: 'Content-Type',
  userAgent: 'User-Agent',
  event: 'X-Service-Event',
  eventId: 'X-Service-Event-ID',
  deliveryId: 'X-Service-Delivery-ID',
  timestamp: 'X-Service-Timestamp',
  signature: 'X-Service-Signature',
} as const;

export const CONTENT_TYPE = 'application/json; charset=utf-8';
export const USER_AGENT = 'Service-Webhooks/1.0';

/**
 * A request body as a receiver gets it: the raw bytes (`Uint8Array`, which
 * includes Node's `Buffer`, or an `ArrayBuffer`), or a string of them
 * (`await request.text()`). Never a parsed object.
 */
export type RawBody = Uint8Array | ArrayBuffer | string;

const encoder = new TextEncoder();

export function toBytes(body: RawBody): Uint8Array {
  if (typeof body === 'string') return encoder.encode(body);
  // ArrayBuffer.isView rather than instanceof: a Uint8Array from another realm
  // (a vm context, a test environment) is still bytes.
  if (ArrayBuffer.isView(body)) return new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
  return new Uint8Array(body);
}

/**
 * The signed string in its two parts: `<timestamp>.` and the raw body. A back
 * end that hashes in pieces feeds them in this order and copies nothing.
 */
export function signedParts(timestamp: string | number, body: RawBody): [head: string, body: RawBody] {
  return [`${timestamp}.`, body];
}

/** The exact bytes that are signed: `<timestamp>.` followed by the raw body. */
export function signedPayload(timestamp: string | number, body: RawBody): Uint8Array {
  const [headText, rest] = signedParts(timestamp, body);
  const head = encoder.encode(headText);
  const bytes = toBytes(rest);
  const out = new Uint8Array(head.length + bytes.length);
  out.set(head, 0);
  out.set(bytes, head.length);
  return out;
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/** `v1=` + lowercase hex of a digest. */
export function formatSignature(digest: Uint8Array): string {
  let hex = '';
  for (const byte of digest) hex += HEX[byte];
  return formatHexSignature(hex);
}

/** `v1=` + a digest already written as lowercase hex. */
export function formatHexSignature(hex: string): string {
  return SIGNATURE_PREFIX + hex;
}

/** The secret, once checked to be a usable signing secret. */
export function checkedSecret(secret: string): string {
  if (typeof secret !== 'string' || secret.length === 0) {
    throw new TypeError('secret must be the non-empty signing secret string (for example "whsec_...")');
  }
  return secret;
}

/** The HMAC key: the UTF-8 bytes of the secret. */
export function secretKeyBytes(secret: string): Uint8Array {
  return encoder.encode(checkedSecret(secret));
}
