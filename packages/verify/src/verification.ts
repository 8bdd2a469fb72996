import { anyDigestMatches } from './constant-time.ts';
import { parseEnvelope } from './envelope.ts';
import { WebhookVerificationError } from './errors.ts';
import type { WebhookEvent } from './events.ts';
import { readHeader, type HeadersLike } from './headers.ts';
import { explainAlteredBody, RAW_BODY_HINT, rawBodyBytes } from './raw-body.ts';
import { HEADER, signedPayload, type RawBody } from './scheme.ts';
import { parseSignatures } from './signature-header.ts';
import { checkTolerance, parseTimestamp, resolveTolerance, toUnixSeconds } from './timestamp.ts';

/**
 * The verification pipeline, shared by `verify` (Web Crypto) and `verifySync`
 * (node:crypto). Each of them only computes the HMACs between the two halves,
 * so both back ends check exactly the same things in the same order:
 *
 * 1. the call itself: secrets, tolerance, `now` (TypeError / RangeError);
 * 2. the body is raw bytes or a string (`body_not_raw`);
 * 3. both headers present (`missing_header`), well-formed
 *    (`malformed_timestamp`, `malformed_signature`);
 * 4. the timestamp within tolerance (`timestamp_too_old`, `timestamp_in_future`);
 * 5. — HMAC of `<timestamp>.<body>` under every secret —
 * 6. some signature matches (`no_matching_signature`, or `body_not_raw`
 *    when the body shows signs of re-serialisation);
 * 7. the body is an envelope (`invalid_envelope`).
 */

interface VerifyOptions {
  /**
   * The raw request body: a string (`await request.text()`) or bytes (a
   * `Buffer` from `express.raw`, a `Uint8Array`, an `ArrayBuffer`). Never a
   * parsed object: the signature covers the exact bytes.
   */
  body: RawBody;
  /** The request headers: Node's `req.headers`, a Fetch `Headers`, or a plain object (any key case). */
  headers: HeadersLike;
  /**
   * How far the timestamp may be from `now`, either way, in seconds.
   * Default and maximum 300; a wider value throws a `RangeError`.
   */
  toleranceSeconds?: number;
  /** The current time, as a `Date` or Unix seconds. Default: the system clock. */
  now?: Date | number;
}

/**
 * What `verify` and `verifySync` take: the request, and either the endpoint's
 * `secret` or, during a rotation, `secrets` (old and new; a request signed
 * with any of them passes).
 */
export type VerifyInput = VerifyOptions &
  (
    | {
        /** The endpoint's signing secret, whole, as shown in the panel (`whsec_…`). */
        secret: string;
        secrets?: undefined;
      }
    | {
        /** Several secrets, e.g. `[newSecret, oldSecret]` while rotating; any may match. */
        secrets: readonly string[];
        secret?: undefined;
      }
  );

/** A request that passed every check that needs no HMAC. */
export interface PreparedRequest {
  secrets: readonly string[];
  /** The signed string `<timestamp>.<body>`, to HMAC under each secret. */
  payload: Uint8Array;
  signatures: Uint8Array[];
  bodyBytes: Uint8Array;
  body: unknown;
}

/** Steps 1 to 4: everything before the HMAC. */
export function prepareVerification(input: VerifyInput): PreparedRequest {
  if (typeof input !== 'object' || input === null) {
    throw new TypeError('verify takes one options object: { body, headers, secret }');
  }
  const secrets = resolveSecrets(input);
  const toleranceSeconds = resolveTolerance(input.toleranceSeconds);
  const nowSeconds = toUnixSeconds(input.now);
  const bodyBytes = rawBodyBytes(input.body);

  const timestampValues = nonEmpty(readHeader(input.headers, HEADER.timestamp));
  const signatureValues = nonEmpty(readHeader(input.headers, HEADER.signature));
  if (timestampValues.length === 0 || signatureValues.length === 0) {
    throw missingHeader(timestampValues.length === 0, signatureValues.length === 0);
  }
  const timestamp = parseTimestamp(timestampValues);
  const signatures = parseSignatures(signatureValues);
  checkTolerance(timestamp, nowSeconds, toleranceSeconds);

  return { secrets, payload: signedPayload(timestamp.text, bodyBytes), signatures, bodyBytes, body: input.body };
}

/** Steps 6 and 7, given the HMAC of the payload under each secret. */
export function completeVerification(request: PreparedRequest, digests: readonly Uint8Array[]): WebhookEvent {
  if (!anyDigestMatches(digests, request.signatures)) {
    const altered = explainAlteredBody(request.body);
    if (altered !== undefined) throw new WebhookVerificationError('body_not_raw', `${altered} ${RAW_BODY_HINT}`);
    throw new WebhookVerificationError(
      'no_matching_signature',
      `No signature in ${HEADER.signature} matches this body. Check that the secret is this endpoint's current ` +
        'signing secret, whole, including the "whsec_" prefix (after regenerating it in the panel, pass ' +
        'secrets: [newSecret, oldSecret] until pending deliveries have drained), and that the body is the raw ' +
        'request body, not re-serialised JSON. Otherwise the request is forged or corrupted: reject it.',
      { header: HEADER.signature },
    );
  }
  return parseEnvelope(request.bodyBytes, typeof request.body === 'string' ? request.body : undefined);
}

function resolveSecrets(input: VerifyInput): readonly string[] {
  const { secret, secrets } = input as { secret?: unknown; secrets?: unknown };
  if (secret !== undefined && secrets !== undefined) {
    throw new TypeError('pass either secret or secrets, not both');
  }
  const list: unknown[] = secrets === undefined ? [secret] : Array.isArray(secrets) ? secrets : [];
  if (list.length === 0 || !list.every((s) => typeof s === 'string' && s !== '')) {
    throw new TypeError(
      'secret must be the endpoint\'s signing secret (a non-empty string such as "whsec_..."), ' +
        'or secrets a non-empty array of them; is the environment variable set?',
    );
  }
  const secretStrings = list as string[];
  if (secretStrings.some((s) => s.trim() !== s)) {
    // The HMAC key is the exact string; a trailing newline from an env file
    // would make every signature fail with no clue why.
    throw new TypeError(
      'a signing secret has leading or trailing whitespace (often a newline from a .env or secret file); ' +
        'Herald secrets never contain whitespace, so trim it',
    );
  }
  return secretStrings;
}

function nonEmpty(values: string[]): string[] {
  return values.filter((value) => value !== '');
}

function missingHeader(timestamp: boolean, signature: boolean): WebhookVerificationError {
  const header = timestamp ? HEADER.timestamp : HEADER.signature;
  const both = timestamp && signature;
  return new WebhookVerificationError(
    'missing_header',
    both
      ? `The ${HEADER.timestamp} and ${HEADER.signature} headers are missing. Pass the request's headers ` +
          '(req.headers in Node, request.headers in Fetch handlers); if you do, a proxy may be stripping them, ' +
          'or the request did not come from Herald.'
      : `The ${header} header is missing or empty, so the request cannot be verified: reject it.`,
    { header },
  );
}
