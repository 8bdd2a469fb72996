import { clientKey } from '../core/client-key.ts';

/**
 * Limits failed authentications per client (its address, an IPv6 host's
 * /64: see clientKey), keeping two promises at once:
 *
 * - A flood of unauthenticated requests does not cost a database query
 *   each. Past `perMinute` failures in a minute, a request with no
 *   credential, a malformed one, or one that failed in the last minute gets
 *   429 with Retry-After before any lookup; requests with one credential
 *   sent at once wait for a single lookup of it.
 * - A valid credential keeps working from a limited address, which many
 *   clients may share (a NAT, a proxy without HERALD_TRUSTED_PROXIES). A
 *   well-formed API key or session token that has not failed still gets its
 *   lookup: Herald cannot tell a key it has not seen from a guess without
 *   looking, and refusing it would lock out new keys, new panel sessions
 *   and everyone after a restart because of someone else's failures.
 *
 * The price of the second promise: a flood of distinct well-formed keys
 * costs one lookup each (by the key's indexed prefix, as any API request
 * does); guessing a key that way is hopeless (its secret is 192 bits).
 * Repeats of a failed credential cost nothing: for a minute they fail again
 * without a lookup (401, or 429 once the client is limited).
 *
 * A try is counted before its lookup (`admit`), so requests running at
 * once cannot all slip under the limit; a success gives back its own try
 * and nothing more. Only failures stay counted, so a busy client with a
 * valid key never reaches the limit.
 *
 * Counters live in this process (as the other rate limits do): N API
 * processes allow N times the failures. Memory is bounded: past 10,000
 * entries the oldest go first.
 */
const WINDOW_MS = 60_000;
const MAX_ENTRIES = 10_000;

interface Counter {
  /** Failures and tries still being checked, in the window that ends at `windowEnds`. */
  tries: number;
  windowEnds: number;
}

/** What to do with a request, given its client and credential. */
export type Admission =
  /** Refused before any lookup: answer 429 with Retry-After. */
  | { action: 'wait'; seconds: number }
  /** The credential failed in the last minute: answer 401 without a lookup (already counted). */
  | { action: 'fail' }
  /** The same credential is being checked for a limited client: ask again once that check is done. */
  | { action: 'after'; checked: Promise<void> }
  /** Look the credential up, then report with `failed`, `accepted` or `release`. */
  | { action: 'check'; ticket: Ticket };

/** One request's reserved try. */
export interface Ticket {
  readonly counter: Counter | undefined;
  readonly credential: string | undefined;
}

interface Checking {
  requests: number;
  checked: Promise<void>;
  done: () => void;
}

export class UnauthenticatedLimiter {
  private readonly counters = new Map<string, Counter>();
  /** Credentials (never a secret: a hash) that failed, with when that stops counting. */
  private readonly failedCredentials = new Map<string, number>();
  /** Credentials accepted in the last minute: a limited client's requests with one need not wait for each other. */
  private readonly acceptedCredentials = new Map<string, number>();
  /** Credentials being checked now. */
  private readonly checking = new Map<string, Checking>();

  /** `perMinute` failures per client; 0 turns the limit off. */
  constructor(readonly perMinute: number) {}

  /**
   * Admits a request from `ip` (request.ip) carrying `credential`: a
   * well-formed API key's or session token's hash, or undefined when it has
   * none or a malformed one (which cost no lookup).
   */
  admit(ip: string, credential: string | undefined, now: number): Admission {
    if (this.perMinute === 0) return { action: 'check', ticket: { counter: undefined, credential: undefined } };
    const counter = this.counterOf(clientKey(ip), now);
    const failedBefore = credential !== undefined && (this.failedCredentials.get(credential) ?? 0) > now;
    if (counter.tries >= this.perMinute) {
      if (credential === undefined || failedBefore) return { action: 'wait', seconds: Math.ceil((counter.windowEnds - now) / 1000) };
      const checking = this.checking.get(credential);
      // Many requests with one unknown key at once cost one lookup, not one each.
      if (checking && !((this.acceptedCredentials.get(credential) ?? 0) > now)) return { action: 'after', checked: checking.checked };
    } else if (failedBefore) {
      counter.tries += 1;
      return { action: 'fail' };
    }
    counter.tries += 1;
    if (credential !== undefined) this.startChecking(credential);
    return { action: 'check', ticket: { counter, credential } };
  }

  /** The credential was looked up and refused: its try stays counted, and it fails without a lookup for a minute. */
  failed(ticket: Ticket, now: number): void {
    if (ticket.credential === undefined || !ticket.counter) return;
    remember(this.failedCredentials, ticket.credential, now + WINDOW_MS);
    this.acceptedCredentials.delete(ticket.credential);
    this.doneChecking(ticket.credential);
  }

  /** The credential was accepted: this request's own try is given back, no other. */
  accepted(ticket: Ticket, now: number): void {
    if (ticket.credential !== undefined && ticket.counter) remember(this.acceptedCredentials, ticket.credential, now + WINDOW_MS);
    this.release(ticket);
  }

  /** The credential was never judged (an error): this request's own try is given back, no other. */
  release(ticket: Ticket): void {
    const { counter, credential } = ticket;
    // A try reserved in a window that has since ended is in an old counter, no longer in the map: harmless.
    if (counter && counter.tries > 0) counter.tries -= 1;
    if (credential !== undefined && counter) this.doneChecking(credential);
  }

  private startChecking(credential: string): void {
    const checking = this.checking.get(credential);
    if (checking) {
      checking.requests += 1;
      return;
    }
    let done!: () => void;
    const checked = new Promise<void>((resolve) => (done = resolve));
    this.checking.set(credential, { requests: 1, checked, done });
  }

  private doneChecking(credential: string): void {
    const checking = this.checking.get(credential);
    if (!checking) return;
    checking.done();
    checking.requests -= 1;
    if (checking.requests === 0) this.checking.delete(credential);
    else checking.checked = new Promise<void>((resolve) => (checking.done = resolve));
  }

  private counterOf(key: string, now: number): Counter {
    let counter = this.counters.get(key);
    if (!counter || counter.windowEnds <= now) {
      counter = { tries: 0, windowEnds: now + WINDOW_MS };
      remember(this.counters, key, counter);
    }
    return counter;
  }
}

/** Sets `key` as the newest entry; past 10,000 the oldest go first. */
function remember<V>(map: Map<string, V>, key: string, value: V): void {
  map.delete(key);
  map.set(key, value);
  while (map.size > MAX_ENTRIES) map.delete(map.keys().next().value!);
}
