import { anyDigestMatches } from './constant-time.ts';
import { parseEnvelope } from './envelope.ts';
import { describeUntrusted, WebhookVerificationError } from './errors.ts';
import type { WebhookEvent } from './events.ts';
import { readHeader, type HeadersLike } from './headers.ts';
import { explainAlteredBody, RAW_BODY_HINT, rawBodyBytes } from './raw-body.ts';
import { toBytes, type RawBody } from './scheme.ts';
import { checkTolerance, parseTimestamp, resolveTolerance, toUnixSeconds } from './timestamp.ts';

/**
 * The Standard Webhooks scheme (https://www.standardwebhooks.com), which an
 * endpoint can choose instead of Herald's own headers:
 *
 * - `webhook-id`: the message id, the same for every attempt of it (Herald
 *   sends the event id), so it doubles as an idempotency key;
 * - `webhook-timestamp`: Unix seconds when the attempt was signed;
 * - `webhook-signature`: `v1,<base64 of HMAC-SHA256>` over
 *   `<webhook-id>.<webhook-timestamp>.<raw body>`, several space-separated
 *   while a rotated secret's overlap runs.
 *
 * The key is the base64-decoded part of the secret after `whsec_`, not the
 * secret's text as in Herald's scheme.
 */

/** Header names of the Standard Webhooks scheme, as Herald sends them. */
export const STANDARD_HEADER = {
  id: 'webhook-id',
  timestamp: 'webhook-timestamp',
  signature: 'webhook-signature',
} as const;

/** The version prefix of each `webhook-signature` entry. */
export const STANDARD_SIGNATURE_PREFIX = 'v1,';

const SECRET_PREFIX = 'whsec_';
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** The HMAC key of a Standard Webhooks secret: the bytes its base64 part (after `whsec_`) encodes. */
export function standardKeyBytes(secret: string): Uint8Array {
  if (typeof secret !== 'string' || secret.length === 0) {
    throw new TypeError('secret must be the non-empty Standard Webhooks signing secret string ("whsec_" and base64)');
  }
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  if (encoded.length === 0 || !BASE64.test(encoded)) {
    throw new TypeError(
      'a Standard Webhooks secret is "whsec_" followed by base64 (A-Z, a-z, 0-9, + and /, padded with =); ' +
        'this one is not: is it the secret of an endpoint that uses Herald\'s own signature scheme?',
    );
  }
  return base64ToBytes(encoded);
}

/** The signed string in its two parts: `<id>.<timestamp>.` and the raw body. */
export function standardSignedParts(id: string, timestamp: string | number, body: RawBody): [head: string, body: RawBody] {
  return [`${id}.${timestamp}.`, body];
}

/** The exact bytes that are signed: `<id>.<timestamp>.` followed by the raw body. */
export function standardSignedPayload(id: string, timestamp: string | number, body: RawBody): Uint8Array {
  const [headText, rest] = standardSignedParts(id, timestamp, body);
  const head = new TextEncoder().encode(headText);
  const bytes = toBytes(rest);
  const out = new Uint8Array(head.length + bytes.length);
  out.set(head, 0);
  out.set(bytes, head.length);
  return out;
}

/** `v1,` + base64 of a digest. */
export function formatStandardSignature(digest: Uint8Array): string {
  return STANDARD_SIGNATURE_PREFIX + bytesToBase64(digest);
}

/** What `verifyStandard` and `verifyStandardSync` take: like `verify`, with Standard Webhooks secrets. */
export type StandardVerifyInput = {
  /** The raw request body, string or bytes; never a parsed object. */
  body: RawBody;
  /** The request headers: Node's `req.headers`, a Fetch `Headers`, or a plain object (any key case). */
  headers: HeadersLike;
  /** How far `webhook-timestamp` may be from `now`, either way, in seconds. Default and maximum 300. */
  toleranceSeconds?: number;
  /** The current time, as a `Date` or Unix seconds. Default: the system clock. */
  now?: Date | number;
} & (
  | { /** The endpoint's secret, `whsec_<base64>`. */ secret: string; secrets?: undefined }
  | { /** Several secrets, e.g. `[newSecret, oldSecret]` while rotating; any may match. */ secrets: readonly string[]; secret?: undefined }
);

/** A Standard Webhooks request that passed every check that needs no HMAC. */
export interface PreparedStandardRequest {
  keys: Uint8Array[];
  payload: Uint8Array;
  signatures: Uint8Array[];
  bodyBytes: Uint8Array;
  body: unknown;
}

/** Everything before the HMAC: the call, the body, the three headers and the timestamp's tolerance. */
export function prepareStandardVerification(input: StandardVerifyInput): PreparedStandardRequest {
  if (typeof input !== 'object' || input === null) {
    throw new TypeError('verifyStandard takes one options object: { body, headers, secret }');
  }
  const { secret, secrets } = input as { secret?: unknown; secrets?: unknown };
  if (secret !== undefined && secrets !== undefined) throw new TypeError('pass either secret or secrets, not both');
  const list: unknown[] = secrets === undefined ? [secret] : Array.isArray(secrets) ? secrets : [];
  if (list.length === 0 || !list.every((s) => typeof s === 'string' && s !== '')) {
    throw new TypeError(
      'secret must be the endpoint\'s signing secret (a non-empty string "whsec_..."), or secrets a non-empty array of them; is the environment variable set?',
    );
  }
  const keys = (list as string[]).map(standardKeyBytes);
  const toleranceSeconds = resolveTolerance(input.toleranceSeconds);
  const nowSeconds = toUnixSeconds(input.now);
  const bodyBytes = rawBodyBytes(input.body);

  const ids = readHeader(input.headers, STANDARD_HEADER.id).filter((v) => v !== '');
  const timestamps = readHeader(input.headers, STANDARD_HEADER.timestamp).filter((v) => v !== '');
  const signatureValues = readHeader(input.headers, STANDARD_HEADER.signature).filter((v) => v !== '');
  const missing = [
    ids.length === 0 ? STANDARD_HEADER.id : undefined,
    timestamps.length === 0 ? STANDARD_HEADER.timestamp : undefined,
    signatureValues.length === 0 ? STANDARD_HEADER.signature : undefined,
  ].filter((h) => h !== undefined);
  if (missing.length > 0) {
    throw new WebhookVerificationError(
      'missing_header',
      `The ${missing.join(', ')} header${missing.length > 1 ? 's are' : ' is'} missing or empty, so the request cannot be verified. ` +
        'Pass the request\'s headers; if you do, the request did not come from an endpoint that uses the Standard Webhooks scheme: reject it.',
      { header: missing[0] },
    );
  }
  if (ids.length > 1) {
    throw new WebhookVerificationError('malformed_signature', `${STANDARD_HEADER.id} appears ${ids.length} times; it is sent once. Reject the request.`, {
      header: STANDARD_HEADER.id,
    });
  }
  const timestamp = parseTimestamp(timestamps, STANDARD_HEADER.timestamp);
  const signatures = parseStandardSignatures(signatureValues);
  checkTolerance(timestamp, nowSeconds, toleranceSeconds, STANDARD_HEADER.timestamp);
  return { keys, payload: standardSignedPayload(ids[0]!, timestamp.text, bodyBytes), signatures, bodyBytes, body: input.body };
}

/** The last step, given the HMAC of the payload under each key. */
export function completeStandardVerification(request: PreparedStandardRequest, digests: readonly Uint8Array[]): WebhookEvent {
  if (!anyDigestMatches(digests, request.signatures)) {
    const altered = explainAlteredBody(request.body);
    if (altered !== undefined) throw new WebhookVerificationError('body_not_raw', `${altered} ${RAW_BODY_HINT}`);
    throw new WebhookVerificationError(
      'no_matching_signature',
      `No signature in ${STANDARD_HEADER.signature} matches this body. Check that the secret is this endpoint's current ` +
        'signing secret, whole, including the "whsec_" prefix (after rotating it, pass secrets: [newSecret, oldSecret] ' +
        'until the overlap ends), and that the body is the raw request body, not re-serialised JSON. Otherwise the ' +
        'request is forged or corrupted: reject it.',
      { header: STANDARD_HEADER.signature },
    );
  }
  return parseEnvelope(request.bodyBytes, typeof request.body === 'string' ? request.body : undefined);
}

/**
 * The v1 digests of `webhook-signature`: entries separated by spaces (commas
 * between whole entries too, as Node joins a repeated header), each
 * `v<n>,<base64>`; entries of other versions are skipped.
 */
export function parseStandardSignatures(values: readonly string[]): Uint8Array[] {
  const entries = values.join(' ').split(/ +|, +/).filter((entry) => entry !== '');
  const digests: Uint8Array[] = [];
  for (const entry of entries) {
    const match = /^(v[0-9a-z]+),(.*)$/.exec(entry);
    if (!match) throw malformed(`an entry is not of the form v1,<base64> (${describeUntrusted(entry)})`);
    if (match[1] !== 'v1') continue;
    const value = match[2]!;
    const digest = BASE64.test(value) ? base64ToBytes(value) : undefined;
    if (digest === undefined || digest.length !== 32) throw malformed('a v1 signature must be the base64 of 32 bytes (44 characters)');
    digests.push(digest);
  }
  if (digests.length === 0) throw malformed('it carries no v1, signature');
  return digests;
}

function malformed(reason: string): WebhookVerificationError {
  return new WebhookVerificationError('malformed_signature', `${STANDARD_HEADER.signature} is malformed: ${reason}. Reject the request.`, {
    header: STANDARD_HEADER.signature,
  });
}

function base64ToBytes(encoded: string): Uint8Array {
  const binary = atob(encoded);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

function bytesToBase64(bytes: Uint8Array): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}
