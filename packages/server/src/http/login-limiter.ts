import { clientKey } from '../core/client-key.ts';

/**
 * Slows down password guessing: failed sign-ins are counted per client and
 * email together (10 in 15 minutes) and per client alone (50 in 15
 * minutes); past either, sign-in answers 429 with Retry-After until the
 * window ends, whatever the password. Not per email alone, so that no one can
 * lock a user out from elsewhere. A try is held against both limits before
 * its password is checked (see `reserve`). A success frees its own try and
 * clears its client+email count, but never lowers the client's count of
 * failures: a tenant signing in to their own user in between guesses earns
 * no guesses at other users' passwords.
 *
 * The client is `request.ip` (the client's own address, or behind a proxy
 * listed in HERALD_TRUSTED_PROXIES the one the proxy says it forwarded for)
 * as clientKey reads it: an IPv6 host's /64, without a port.
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
  /** Tries reserved and not yet judged. */
  pending: number;
  windowEnds: number;
}

/** One sign-in's reserved try: the counters it was held against. */
export interface LoginTicket {
  readonly counters: readonly Counter[];
  readonly emailKey: string;
}

export class LoginLimiter {
  private readonly counters = new Map<string, Counter>();

  constructor(private readonly limits: LoginLimits = DEFAULT_LOGIN_LIMITS) {}

  private keys(ip: string, email: string): Array<[string, number]> {
    const client = clientKey(ip);
    return [
      [`a:${client}`, this.limits.perAddress],
      [`ae:${client}:${email.trim().toLowerCase()}`, this.limits.perAddressAndEmail],
    ];
  }

  /**
   * Holds a try against the limits before its password is checked, so that
   * tries running at once cannot all slip under the limit: with N at once,
   * at most the limit are let through. Returns the seconds to wait (nothing
   * is then held), or the try's ticket; follow up with `failed`,
   * `succeeded` or, if the password was never checked, `refund`.
   */
  reserve(ip: string, email: string, now: number): { wait: number } | { ticket: LoginTicket } {
    const keys = this.keys(ip, email);
    let wait = 0;
    for (const [key, max] of keys) {
      const counter = this.counters.get(key);
      if (counter && counter.windowEnds > now && counter.failures + counter.pending >= max) wait = Math.max(wait, Math.ceil((counter.windowEnds - now) / 1000));
    }
    if (wait > 0) return { wait };
    const counters = keys.map(([key]) => {
      let counter = this.counters.get(key);
      if (!counter || counter.windowEnds <= now) {
        counter = { failures: 0, pending: 0, windowEnds: now + this.limits.windowMs };
        this.counters.delete(key);
        this.counters.set(key, counter);
      }
      counter.pending += 1;
      return counter;
    });
    while (this.counters.size > MAX_COUNTERS) this.counters.delete(this.counters.keys().next().value!);
    return { ticket: { counters, emailKey: keys[1]![0] } };
  }

  /** The password was wrong: the try counts as a failure against both limits. */
  failed(ticket: LoginTicket): void {
    for (const counter of ticket.counters) {
      counter.pending -= 1;
      counter.failures += 1;
    }
  }

  /** The password was right: the try is freed and the client+email count starts again; the client's failures stay. */
  succeeded(ticket: LoginTicket): void {
    this.refund(ticket);
    if (this.counters.get(ticket.emailKey) === ticket.counters[1]) this.counters.delete(ticket.emailKey);
  }

  /** The password was never checked (Herald was busy, or failed): the try does not count. */
  refund(ticket: LoginTicket): void {
    // Only the counters this try was held against: in a window that has since ended they are no longer in use.
    for (const counter of ticket.counters) counter.pending -= 1;
  }
}
