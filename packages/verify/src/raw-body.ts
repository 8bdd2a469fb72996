import { WebhookVerificationError } from './errors.ts';
import { toBytes } from './scheme.ts';

/**
 * Why the raw body matters: the signature covers the exact bytes Herald sent.
 * A body that went through `JSON.parse` and back can differ in whitespace,
 * key order, number formatting (`1.50` → `1.5`, big integers rounded) or
 * escapes (`\u00e9` → `é`), and then no signature can match. So `verify` takes
 * the body before any JSON parser has touched it, and parses it itself after
 * the signature checks out.
 */
export const RAW_BODY_HINT =
  'Pass the raw request body, exactly as received: a string or bytes, never a parsed object. ' +
  'Express: put express.raw({ type: "application/json" }) on the webhook route and pass req.body (a Buffer). ' +
  'Fetch handlers (Workers, Deno, Bun, Next.js App Router, Hono): pass await request.text(). ' +
  'Fastify: add a content-type parser with parseAs: "buffer" for the webhook route. ' +
  'node:http: concatenate the request chunks into one Buffer.';

/** The body as bytes, or `body_not_raw` when it is not a string, `Uint8Array`/`Buffer`, other typed-array view or `ArrayBuffer`. */
export function rawBodyBytes(body: unknown): Uint8Array {
  if (typeof body === 'string' || isArrayBuffer(body)) return toBytes(body);
  // Any view (Buffer, Uint8Array, DataView…) is read as the bytes it spans.
  if (ArrayBuffer.isView(body)) return new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
  throw new WebhookVerificationError('body_not_raw', `${describeNonRaw(body)} ${RAW_BODY_HINT}`);
}

/**
 * Called only after no signature matched: when the body shows signs of having
 * been re-serialised, the useful answer is "fix how you read the body", not
 * "wrong signature". Herald sends `JSON.stringify` output, which survives
 * `JSON.stringify(JSON.parse(body))` unchanged; a string that does not was
 * altered after it left Herald (pretty-printed, re-encoded, rebuilt by
 * middleware).
 *
 * Limited to strings: bytes come straight from the socket (express.raw,
 * Buffer.concat), and a forged request is rejected either way.
 *
 * @returns an explanation, or `undefined` when the body looks raw.
 */
export function explainAlteredBody(body: unknown): string | undefined {
  if (typeof body !== 'string') return undefined;
  if (body === '[object Object]') {
    return 'The body is the string "[object Object]": an object was converted to a string.';
  }
  let reserialised: string;
  try {
    reserialised = JSON.stringify(JSON.parse(body));
  } catch {
    return undefined;
  }
  if (reserialised === body) return undefined;
  return 'No signature matched, and the body is JSON that is not in the compact form Herald sends: ' +
    'it was probably re-serialised (for example JSON.stringify(req.body, null, 2)) or altered by middleware.';
}

function describeNonRaw(body: unknown): string {
  if (body === undefined) return 'The body is undefined: nothing read the request body, or it was read elsewhere.';
  if (body === null) return 'The body is null.';
  if (typeof body === 'object') {
    const empty = Object.getPrototypeOf(body) === Object.prototype && Object.keys(body).length === 0;
    return empty
      ? 'The body is an empty object: a body parser ran but did not match (check the type option of express.raw against the Content-Type, application/json).'
      : 'The body is a parsed object: a JSON body parser ran before verify.';
  }
  return `The body is a ${typeof body}.`;
}

function isArrayBuffer(value: unknown): value is ArrayBuffer {
  // toString tag rather than instanceof, which fails for buffers from another realm.
  return Object.prototype.toString.call(value) === '[object ArrayBuffer]';
}
