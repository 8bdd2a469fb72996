/**
 * Limits failed authentications per client address, so a client guessing
 * API keys, or sending junk, costs no database query past its budget: a
 * well-formed unknown key costs a lookup each time, and nothing else stops
 * it (the per-key rate limits count only requests whose key is known).
 *
 * Failures are counted per address in a fixed window of a minute; past the
 * limit, the address's requests get 429 with Retry-After until the window
 * ends, before any lookup. Only failures count, so a busy client with a valid
 * key never reaches the limit. Clients behind one address (a NAT, a proxy)
 * share it; so that one of them guessing does not lock out the rest, a
 * credential this process has accepted in the last hour still goes on to the
 * usual check from a limited address. A key or session it has not seen waits
 * for the window to end.
 *
 * Counters live in this process (as the other rate limits do): N API
 * processes allow N times the failures. Memory is bounded: past 10,000
 * entries the oldest go first.
 */
export const UNAUTHENTICATED_WINDOW_MS = 60_000;
const VOUCHED_FOR_MS = 3_600_000;
const MAX_ENTRIES = 10_000;

interface Counter {
  failures: number;
  windowEnds: number;
}

export class UnauthenticatedLimiter {
  private readonly counters = new Map<string, Counter>();
  private readonly accepted = new Map<string, number>();

  /** `perMinute` failures per address; 0 turns the limit off. */
  constructor(readonly perMinute: number) {}

  /** Seconds until `address` may try an unproven credential again; 0 when it may now. */
  retryAfter(address: string, now: number): number {
    if (this.perMinute === 0) return 0;
    const counter = this.counters.get(address);
    if (!counter || counter.windowEnds <= now || counter.failures < this.perMinute) return 0;
    return Math.ceil((counter.windowEnds - now) / 1000);
  }

  failed(address: string, now: number): void {
    if (this.perMinute === 0) return;
    let counter = this.counters.get(address);
    if (!counter || counter.windowEnds <= now) {
      counter = { failures: 0, windowEnds: now + UNAUTHENTICATED_WINDOW_MS };
      this.counters.delete(address);
      this.counters.set(address, counter);
    }
    counter.failures += 1;
    trim(this.counters);
  }

  /** `credential` (an API key's prefix, a session token's hash: never a secret) was just accepted. */
  accept(credential: string, now: number): void {
    if (this.perMinute === 0) return;
    this.accepted.delete(credential);
    this.accepted.set(credential, now + VOUCHED_FOR_MS);
    trim(this.accepted);
  }

  wasAccepted(credential: string, now: number): boolean {
    return (this.accepted.get(credential) ?? 0) > now;
  }
}

function trim(map: Map<string, unknown>): void {
  while (map.size > MAX_ENTRIES) map.delete(map.keys().next().value!);
}
