import { hmacSha256 } from './hmac-web.ts';
import { formatSignature, signedPayload, type RawBody } from './scheme.ts';

export interface SignInput {
  /** The raw request body, exactly the bytes that are sent. */
  body: RawBody;
  /** The endpoint's signing secret, e.g. `whsec_...`; its UTF-8 bytes are the HMAC key. */
  secret: string;
  /** Unix time in seconds, sent as `X-Service-Timestamp`. */
  timestamp: number | string;
}

/**
 * Computes the `X-Service-Signature` value with Web Crypto, so it runs on
 * Node, Deno, Bun, Cloudflare Workers and browsers.
 *
 * @example
 * const header = await sign({ body: rawBody, secret: 'whsec_...', timestamp: 1700000000 });
 * // 'v1=5d3c...'
 */
export async function sign({ body, secret, timestamp }: SignInput): Promise<string> {
  return formatSignature(await hmacSha256(secret, signedPayload(String(timestamp), body)));
}
