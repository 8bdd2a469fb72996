import { secretKeyBytes } from './scheme.ts';

/**
 * HMAC-SHA256 on Web Crypto (`crypto.subtle`): Node 20+, Deno, Bun,
 * Cloudflare Workers and browsers (secure contexts only).
 */
export async function hmacSha256(secret: string, payload: Uint8Array): Promise<Uint8Array> {
  return hmacSha256WithKey(secretKeyBytes(secret), payload);
}

/** HMAC-SHA256 under raw key bytes (the Standard Webhooks scheme's decoded secret), on Web Crypto. */
export async function hmacSha256WithKey(keyBytes: Uint8Array, payload: Uint8Array): Promise<Uint8Array> {
  const subtle = globalThis.crypto?.subtle;
  if (subtle === undefined) {
    throw new Error(
      'Web Crypto (crypto.subtle) is not available here. Browsers expose it only on https pages; ' +
        'on Node, import verifySync and signSync from "@herald/verify/node".',
    );
  }
  // The casts are sound: both arrays are freshly allocated on an ArrayBuffer
  // (TextEncoder, signedPayload), never on a SharedArrayBuffer, which is the
  // case TypeScript's BufferSource rules out.
  const key = await subtle.importKey(
    'raw',
    keyBytes as Uint8Array<ArrayBuffer>,
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign'],
  );
  return new Uint8Array(await subtle.sign('HMAC', key, payload as Uint8Array<ArrayBuffer>));
}
