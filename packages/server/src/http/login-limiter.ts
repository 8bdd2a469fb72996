/**
 * Slows down password guessing: failed sign-ins are counted per address and
 * email together (10 in 15 minutes) and per address alone (50 in 15
 * minutes); past either, sign-in answers 429 with Retry-After until the
 * window ends, whatever the password. Not per email alone, so that no one can
 * lock a user out from elsewhere. A try is counted before its password is
 * checked (see `reserve`); a success clears its address+email count.
 *
 * The address is `request.ip`: the client's own, or behind a proxy listed in
 * HERALD_TRUSTED_PROXIES the one the proxy says it forwarded for.
 *
 * Counters live in this process (as the API rate limits do): N API processes
 * allow N times as many guesses. Memory is bounded: the oldest counters go
 * first past 10,000.
 */
export interface LoginLimits {
  windowMs: number;
  perAddressAndEmail: number;
  perAddress: number;
}

export const DEFAULT_LOGIN_LIMITS: Readonly<LoginLimits> = Object.freeze({ windowMs: 15 * 60_000, perAddressAndEmail: 10, perAddress: 50 });

const MAX_COUNTERS = 10_000;

interface Counter {
  failures: number;
  windowEnds: number;
}

export class LoginLimiter {
  private readonly counters = new Map<string, Counter>();

  constructor(private readonly limits: LoginLimits = DEFAULT_LOGIN_LIMITS) {}

  private keys(address: string, email: string): Array<[string, number]> {
    return [
      [`a:${address}`, this.limits.perAddress],
      [`ae:${address}:${email.trim().toLowerCase()}`, this.limits.perAddressAndEmail],
    ];
  }

  /**
   * Counts a try as a failure before its password is checked, so that tries
   * running at once cannot all slip under the limit: with N at once, at most
   * the limit are let through. Returns the seconds to wait (the try is then
   * not counted), or 0 when it may go ahead; follow up with `succeeded` or,
   * if the password was never checked, `refund`.
   */
  reserve(address: string, email: string, now: number): number {
    let wait = 0;
    for (const [key, max] of this.keys(address, email)) {
      const counter = this.counters.get(key);
      if (counter && counter.windowEnds > now && counter.failures >= max) wait = Math.max(wait, Math.ceil((counter.windowEnds - now) / 1000));
    }
    if (wait > 0) return wait;
    for (const [key] of this.keys(address, email)) {
      let counter = this.counters.get(key);
      if (!counter || counter.windowEnds <= now) {
        counter = { failures: 0, windowEnds: now + this.limits.windowMs };
        this.counters.delete(key);
        this.counters.set(key, counter);
      }
      counter.failures += 1;
    }
    while (this.counters.size > MAX_COUNTERS) this.counters.delete(this.counters.keys().next().value!);
    return 0;
  }

  /** The password was right: the address+email count starts again, and the address gets its try back. */
  succeeded(address: string, email: string, now: number): void {
    const [[byAddress], [byBoth]] = this.keys(address, email) as [[string, number], [string, number]];
    this.giveBack(byAddress, now);
    this.counters.delete(byBoth);
  }

  /** The password was never checked (Herald was busy, or failed): the try does not count. */
  refund(address: string, email: string, now: number): void {
    for (const [key] of this.keys(address, email)) this.giveBack(key, now);
  }

  private giveBack(key: string, now: number): void {
    const counter = this.counters.get(key);
    if (counter && counter.windowEnds > now && counter.failures > 0) counter.failures -= 1;
  }
}
