/**
 * Every way a request can fail verification, in one table: the stable `code`
 * (safe to switch on and to log), the HTTP status a receiver should answer
 * with, and what the code means. The README's error table mirrors this one
 * and a test keeps them in step.
 *
 * Why the statuses differ: Herald treats any 4xx other than 429 as permanent
 * (no retry) and 5xx as "try again later". A forged, replayed or corrupted
 * request deserves a permanent 400. `body_not_raw` is always a bug in the
 * receiver's own setup, so it answers 500: Herald keeps retrying, and the
 * events arrive once the route is fixed instead of being lost.
 *
 * Mistakes in how `verify` itself is called (no secret, a tolerance wider
 * than 300 s, `now` in milliseconds) are not verification failures: they
 * throw `TypeError` / `RangeError`, which an error handler turns into a 500,
 * for the same reason.
 *
 * @example
 * VERIFICATION_ERRORS.body_not_raw.status; // 500
 */
export const VERIFICATION_ERRORS = {
  missing_header: {
    status: 400,
    meaning: 'X-Service-Timestamp or X-Service-Signature is absent or empty; `error.header` says which.',
  },
  malformed_timestamp: {
    status: 400,
    meaning: 'X-Service-Timestamp is not 1 to 12 ASCII digits (no sign, exponent, spaces or other characters), or appears twice.',
  },
  timestamp_too_old: {
    status: 400,
    meaning: 'X-Service-Timestamp is further in the past than the tolerance (300 s by default): a replay, or a wrong clock.',
  },
  timestamp_in_future: {
    status: 400,
    meaning: 'X-Service-Timestamp is further in the future than the tolerance: a wrong clock on one side.',
  },
  malformed_signature: {
    status: 400,
    meaning: 'X-Service-Signature holds no `v1=` entry, or an entry that is not `v<n>=…`, or a v1 value that is not 64 lowercase hex digits.',
  },
  no_matching_signature: {
    status: 400,
    meaning: 'No v1 signature in the header matches the body under any of the secrets given.',
  },
  body_not_raw: {
    status: 500,
    meaning: 'The body is not the raw request body: a parsed object, undefined, or a string that was re-serialised.',
  },
  invalid_envelope: {
    status: 400,
    meaning: 'The signature is valid but the body is not a JSON event envelope `{ id, type, created_at, data }`.',
  },
} as const satisfies Record<string, { status: number; meaning: string }>;

/** The stable code of a {@link WebhookVerificationError}. */
export type VerificationErrorCode = keyof typeof VERIFICATION_ERRORS;

// A package shipped as both ESM and CommonJS can be loaded twice in one
// process (the "dual package hazard"); each copy then has its own class, and
// a plain `instanceof` across copies is false. A registered symbol is shared
// by every copy, so `instanceof` below answers by brand instead of by
// prototype chain.
const BRAND = Symbol.for('@herald/verify.WebhookVerificationError');

/**
 * The one error `verify` and `verifySync` throw when a request must not be
 * processed. Switch on `code`; answer with `status`; `message` says what to
 * check next.
 *
 * @example
 * try {
 *   event = await verify({ body, headers, secret });
 * } catch (error) {
 *   if (error instanceof WebhookVerificationError) {
 *     console.warn(error.code, error.message);
 *     return new Response(error.code, { status: error.status });
 *   }
 *   throw error;
 * }
 */
export class WebhookVerificationError extends Error {
  override readonly name = 'WebhookVerificationError';
  /** Stable, machine-readable reason; see {@link VERIFICATION_ERRORS}. */
  readonly code: VerificationErrorCode;
  /** The HTTP status to answer Herald with (400, or 500 for `body_not_raw`). */
  readonly status: number;
  /** For header problems: the header concerned, e.g. `X-Service-Signature`. */
  readonly header: string | undefined;

  constructor(code: VerificationErrorCode, message: string, options: { header?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.status = VERIFICATION_ERRORS[code].status;
    this.header = options.header;
  }

  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
  }
}

Object.defineProperty(WebhookVerificationError.prototype, BRAND, { value: true });

/**
 * A short, log-safe rendering of an untrusted header value for an error
 * message: quoted and escaped when short, only its length when long, so a
 * hostile header can neither forge log lines nor flood them.
 */
export function describeUntrusted(value: string): string {
  return value.length > 24 ? `${value.length} characters` : JSON.stringify(value);
}
