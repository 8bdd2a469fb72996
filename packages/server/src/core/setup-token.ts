import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * The one-time token of first-run setup. An API process that starts while
 * Herald has no user prints a link with it on its console; only someone who
 * can read that console can create the first user through the panel. It is
 * never stored or logged, and is spent once setup is done.
 *
 * It travels in the link's fragment (`/setup#token=…`), which browsers never
 * send: not to Herald's request log, not to a proxy's access log, not in a
 * Referer. The panel reads it from the page's address and sends it in the
 * body of POST /v1/setup.
 *
 * Each API process has its own: behind a load balancer with several, use the
 * link of the process that answers, or create the first user with
 * `herald users create`.
 */
export class SetupToken {
  /** 256 random bits, base64url. */
  readonly value: string;
  private spent = false;

  constructor(value: string = randomBytes(32).toString('base64url')) {
    this.value = value;
  }

  /** Whether `sent` is this token, compared in constant time; false once spent. */
  matches(sent: string): boolean {
    if (this.spent) return false;
    const digest = (s: string) => createHash('sha256').update(s).digest();
    return timingSafeEqual(digest(sent), digest(this.value));
  }

  /** Setup is done: the token opens nothing any more. */
  spend(): void {
    this.spent = true;
  }
}
