import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

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

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await derive(password, salt, LOG_N, R, P);
  return ['scrypt', LOG_N, R, P, salt.toString('base64url'), key.toString('base64url')].join('$');
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [logN, r, p] = parts.slice(1, 4).map(Number) as [number, number, number];
  if (![logN, r, p].every((n) => Number.isInteger(n) && n > 0) || logN > 22) return false;
  const expected = Buffer.from(parts[5]!, 'base64url');
  const actual = await derive(password, Buffer.from(parts[4]!, 'base64url'), logN, r, p);
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/**
 * Compared against when no user has the email given, so a wrong email costs
 * the same time as a wrong password and the answer's timing tells nothing.
 */
let decoy: Promise<string> | undefined;
export function decoyHash(): Promise<string> {
  decoy ??= hashPassword(randomBytes(16).toString('base64url'));
  return decoy;
}

/** A password for a user created without one: 20 characters from a 64-letter alphabet (120 bits). */
export function generatePassword(): string {
  return randomBytes(15).toString('base64url');
}
