import { describeUntrusted, WebhookVerificationError } from './errors.ts';
import { HEADER } from './scheme.ts';

/**
 * The widest tolerance the signature scheme allows (300 seconds: no wider
 * than 5 minutes). It is also the default.
 */
export const MAX_TOLERANCE_SECONDS = 300;

// 1 to 12 ASCII digits, nothing else: no sign, exponent, decimal point,
// spaces or trailing garbage. 12 digits reach the year 33658, and keep every
// value an exact integer in a double.
const TIMESTAMP = /^[0-9]{1,12}$/;

// Unix seconds pass 1e11 only in the year 5138; a `now` that large is
// milliseconds (Date.now()) passed by mistake.
const LOOKS_LIKE_MILLISECONDS = 1e11;

export interface SignedTimestamp {
  /** The header value exactly as received: it is what was signed. */
  text: string;
  seconds: number;
}

/** Parses the values of `X-Service-Timestamp` (from `readHeader`, known non-empty). */
export function parseTimestamp(values: readonly string[], header: string = HEADER.timestamp): SignedTimestamp {
  if (values.length > 1) {
    throw new WebhookVerificationError(
      'malformed_timestamp',
      `${header} appears ${values.length} times; Herald sends it once. Reject the request.`,
      { header },
    );
  }
  const text = values[0] ?? '';
  if (!TIMESTAMP.test(text)) {
    throw new WebhookVerificationError(
      'malformed_timestamp',
      `${header} must be Unix time in seconds as 1 to 12 ASCII digits; got ${describeUntrusted(text)}. Reject the request.`,
      { header },
    );
  }
  return { text, seconds: Number(text) };
}

/** Rejects a timestamp further than `toleranceSeconds` from `nowSeconds`, either way; exactly the tolerance is accepted. */
export function checkTolerance(timestamp: SignedTimestamp, nowSeconds: number, toleranceSeconds: number, header: string = HEADER.timestamp): void {
  const age = nowSeconds - timestamp.seconds;
  if (age > toleranceSeconds) {
    throw new WebhookVerificationError(
      'timestamp_too_old',
      `${header} is ${age} s in the past, beyond the ${toleranceSeconds} s tolerance. ` +
        'Herald signs every attempt afresh, so this is a replayed request, or this machine\'s clock is behind (check NTP).',
      { header },
    );
  }
  if (-age > toleranceSeconds) {
    throw new WebhookVerificationError(
      'timestamp_in_future',
      `${header} is ${-age} s in the future, beyond the ${toleranceSeconds} s tolerance. ` +
        'One of the two clocks is wrong: check this machine\'s clock (NTP).',
      { header },
    );
  }
}

/** Validates the `toleranceSeconds` option; a wider tolerance than the scheme allows is a programming error. */
export function resolveTolerance(toleranceSeconds: number | undefined): number {
  if (toleranceSeconds === undefined) return MAX_TOLERANCE_SECONDS;
  if (typeof toleranceSeconds !== 'number' || !(toleranceSeconds >= 0 && toleranceSeconds <= MAX_TOLERANCE_SECONDS)) {
    throw new RangeError(
      `toleranceSeconds must be a number from 0 to ${MAX_TOLERANCE_SECONDS}; got ${String(toleranceSeconds)}. ` +
        `Herald's signature scheme allows at most ${MAX_TOLERANCE_SECONDS} s (5 minutes); omit the option to use that.`,
    );
  }
  return toleranceSeconds;
}

/**
 * A time in whole Unix seconds, from a `Date`, a number of seconds, or (when
 * undefined) the system clock. `option` names the option in error messages.
 */
export function toUnixSeconds(value: Date | number | undefined, option = 'now'): number {
  if (value === undefined) return Math.floor(Date.now() / 1000);
  const seconds = value instanceof Date ? value.getTime() / 1000 : value;
  if (typeof seconds !== 'number' || !Number.isFinite(seconds)) {
    throw new TypeError(`${option} must be a valid Date or Unix time in seconds; got ${String(value)}`);
  }
  if (seconds < 0) throw new RangeError(`${option} must not be before 1970; got ${String(value)}`);
  if (seconds >= LOOKS_LIKE_MILLISECONDS) {
    throw new RangeError(
      `${option}=${String(value)} looks like milliseconds; pass Unix seconds (Math.floor(Date.now() / 1000)) or a Date`,
    );
  }
  return Math.floor(seconds);
}
