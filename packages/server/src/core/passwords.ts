import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { HeraldError } from '../errors.ts';

/**
 * Panel passwords, hashed with scrypt (node:crypto, no native addon). The
 * stored form carries its parameters, so they can be raised later without
 * invalidating existing hashes: `scrypt$<log2 N>$<r>$<p>$<salt>$<hash>`.
 *
 * N = 2^15, r = 8, p = 1 is OWASP's recommended minimum: 32 MiB and some
 * tens of milliseconds per hash, on libuv's thread pool, off the event loop.
 */
const LOG_N = 15;
const R = 8;
const P = 1;
const KEY_BYTES = 32;
const SALT_BYTES = 16;

export const PASSWORD_MIN = 12;
export const PASSWORD_MAX = 1024;

function derive(password: string, salt: Buffer, logN: number, r: number, p: number): Promise<Buffer> {
  const options: ScryptOptions = { N: 2 ** logN, r, p, maxmem: 256 * 2 ** logN * r };
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFKC'), salt, KEY_BYTES, options, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

async function hashWith(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await derive(password, salt, LOG_N, R, P);
  return ['scrypt', LOG_N, R, P, salt.toString('base64url'), key.toString('base64url')].join('$');
}

async function verifyWith(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [logN, r, p] = parts.slice(1, 4).map(Number) as [number, number, number];
  if (![logN, r, p].every((n) => Number.isInteger(n) && n > 0) || logN > 22) return false;
  const expected = Buffer.from(parts[5]!, 'base64url');
  const actual = await derive(password, Buffer.from(parts[4]!, 'base64url'), logN, r, p);
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/** How many hashes run at once, and how many may wait for a turn. */
export interface HashingLimits {
  concurrency: number;
  queue: number;
}

/**
 * Two at a time leave two of libuv's four threads to DNS lookups and file
 * I/O, whatever arrives at sign-in; sixteen waiting is about a second's work.
 */
export const DEFAULT_HASHING_LIMITS: Readonly<HashingLimits> = Object.freeze({ concurrency: 2, queue: 16 });

/**
 * Hashes and checks passwords, a few at a time. scrypt runs on libuv's
 * thread pool, which the delivery agent's DNS lookups share: unbounded, a
 * flood of sign-ins would queue seconds of hashing ahead of every lookup.
 * Past the queue, a hash is refused at once (`busy`, 503) rather than piling
 * up. One per process, built by the composition root.
 */
export class PasswordHasher {
  private running = 0;
  private readonly waiting: Array<() => void> = [];
  private decoy: Promise<string> | undefined;
  /** The most hashes that ran at once since this hasher was built. */
  peak = 0;

  constructor(private readonly limits: HashingLimits = DEFAULT_HASHING_LIMITS) {}

  hash(password: string): Promise<string> {
    return this.inTurn(() => hashWith(password));
  }

  /** Whether `password` matches the stored hash; false for a hash in a form Herald does not know. */
  verify(password: string, stored: string): Promise<boolean> {
    return this.inTurn(() => verifyWith(password, stored));
  }

  /**
   * Compared against when no user has the email given, so a wrong email costs
   * the same time as a wrong password and the answer's timing tells nothing.
   */
  async decoyHash(): Promise<string> {
    this.decoy ??= this.hash(randomBytes(16).toString('base64url'));
    try {
      return await this.decoy;
    } catch (err) {
      this.decoy = undefined;
      throw err;
    }
  }

  private async inTurn<T>(work: () => Promise<T>): Promise<T> {
    if (this.running >= this.limits.concurrency) {
      if (this.waiting.length >= this.limits.queue) {
        throw new HeraldError('busy', 'Herald is checking too many passwords at once; wait a second and try again');
      }
      // The slot is handed over by the one finishing, so `running` never overshoots.
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else {
      this.running += 1;
    }
    this.peak = Math.max(this.peak, this.running);
    try {
      return await work();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.running -= 1;
    }
  }
}

/** A password for a user created without one: 20 characters from a 64-letter alphabet (120 bits). */
export function generatePassword(): string {
  return randomBytes(15).toString('base64url');
}
