/** The endpoint form's rate limit: what the API accepts, checked before sending. */

export const RATE_LIMIT_MAX = 10_000;

/** Empty: no limit (null). A whole number from 1 to 10,000: that limit. Anything else: the message to show. */
export function parseRateLimit(value: string): { value: number | null } | { error: string } {
  const text = value.trim();
  if (text === '') return { value: null };
  const n = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!(n >= 1 && n <= RATE_LIMIT_MAX)) {
    return { error: `Enter a whole number of requests per second from 1 to ${RATE_LIMIT_MAX.toLocaleString('en')}, or leave it empty for no limit.` };
  }
  return { value: n };
}

export const days = (n: number) => `${n} ${n === 1 ? 'day' : 'days'}`;
