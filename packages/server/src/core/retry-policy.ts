import type { RetrySchedule } from '../config.ts';

/**
 * When to try again, or null when no retry is left. Pure: the clock and the
 * random source are parameters.
 *
 * The nominal delay before retry n (1-based) is base · factor^(n−1), capped;
 * jitter moves it by up to ±jitter of itself. A receiver's Retry-After is
 * honoured within the schedule's bounds: it can lengthen the wait up to the
 * cap, never shorten it below the schedule.
 *
 * @example
 * nextAttemptAt({ attempt: 1, now, random: Math.random, schedule }) // ≈ now + 1 min
 */
export function nextAttemptAt(input: {
  /** The attempt just made, 1 for the first. */
  attempt: number;
  now: Date;
  random: () => number;
  schedule: RetrySchedule;
  /** From a Retry-After header, in milliseconds. */
  retryAfterMs?: number;
}): Date | null {
  const { attempt, now, random, schedule, retryAfterMs } = input;
  if (attempt > schedule.maxRetries) return null;
  const nominal = Math.min(schedule.capMs, schedule.baseMs * schedule.factor ** (attempt - 1));
  const jittered = nominal * (1 + schedule.jitter * (2 * random() - 1));
  const delay = Math.min(schedule.capMs, Math.max(jittered, retryAfterMs ?? 0));
  return new Date(now.getTime() + Math.max(0, Math.round(delay)));
}

/** Parses Retry-After (delta seconds or an HTTP date) into milliseconds from `now`. */
export function parseRetryAfter(value: string | undefined, now: Date): number | undefined {
  if (!value) return undefined;
  const trimmed = value.trim();
  if (/^\d{1,10}$/.test(trimmed)) return Number(trimmed) * 1000;
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now.getTime());
}
