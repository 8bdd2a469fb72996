import { createHash, createHmac, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { PanelAuthConfig } from '../config.ts';
import { PASSWORD_MAX, PASSWORD_MIN, type PasswordHasher } from '../core/passwords.ts';
import { HeraldError, type FieldError } from '../errors.ts';
import type { Db, Queryable } from '../storage/db.ts';
import { insertAccount } from '../storage/queries/accounts.ts';
import { requireAccount } from './accounts.ts';
import * as q from '../storage/queries/users.ts';

/**
 * The people who sign in to the panel, and their sessions. A user belongs
 * to one account and sees what an API key of that account sees.
 */

export interface NewUser {
  email: unknown;
  name: unknown;
  password: unknown;
}

/** Lenient on purpose: one @, something on both sides, no spaces. Delivery is not Herald's business. */
const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,255}$/;

function userFieldErrors(input: NewUser): FieldError[] {
  const errors: FieldError[] = [];
  if (typeof input.email !== 'string' || !EMAIL.test(input.email.trim())) {
    errors.push({ field: 'email', message: 'must be an email address, e.g. ada@example.com' });
  }
  if (typeof input.name !== 'string' || input.name.trim() === '' || input.name.length > 200) {
    errors.push({ field: 'name', message: 'is required: the person\u2019s name, up to 200 characters' });
  }
  errors.push(...passwordErrors(input.password));
  return errors;
}

function passwordErrors(password: unknown): FieldError[] {
  if (typeof password !== 'string' || [...password].length < PASSWORD_MIN) {
    return [{ field: 'password', message: `must be at least ${PASSWORD_MIN} characters; a few unrelated words make a good one` }];
  }
  if (password.length > PASSWORD_MAX) return [{ field: 'password', message: `must be at most ${PASSWORD_MAX} characters` }];
  return [];
}

function invalid(errors: FieldError[]): HeraldError {
  return new HeraldError('validation_failed', errors.map((e) => `${e.field}: ${e.message}`).join('; '), { errors });
}

async function insertValidUser(db: Queryable, passwords: PasswordHasher, accountId: string, input: NewUser): Promise<q.UserRow> {
  const email = (input.email as string).trim();
  if (await q.findUserByEmail(db, email)) {
    throw new HeraldError('email_in_use', `a user with the email ${email} already exists; sign in with it, or choose another`);
  }
  const passwordHash = await passwords.hash(input.password as string);
  return q.insertUser(db, { id: randomUUID(), accountId, email, name: (input.name as string).trim(), passwordHash });
}

/** `herald users create`: a user of an existing account. */
export async function createUser(db: Queryable, passwords: PasswordHasher, accountId: string, input: NewUser): Promise<q.UserRow> {
  const errors = userFieldErrors(input);
  if (errors.length) throw invalid(errors);
  await requireAccount(db, accountId);
  return insertValidUser(db, passwords, accountId, input);
}

export const setupDone = () =>
  new HeraldError('setup_done', 'Herald already has a user; sign in instead, or ask your operator for an account (herald users create)');

/** First run: true while Herald has no user at all. */
export async function setupNeeded(db: Queryable): Promise<boolean> {
  return (await q.countUsers(db)) === 0;
}

/**
 * First run: creates an account and its first user, once. Serialised by an
 * advisory lock, so two browsers racing through setup create one user.
 */
export async function setupFirstUser(db: Db, passwords: PasswordHasher, input: NewUser & { account_name: unknown }): Promise<q.UserRow> {
  const errors = userFieldErrors(input);
  if (typeof input.account_name !== 'string' || input.account_name.trim() === '' || input.account_name.length > 200) {
    errors.unshift({ field: 'account_name', message: 'is required: your company or team, up to 200 characters' });
  }
  if (errors.length) throw invalid(errors);
  return db.transaction(async (tx) => {
    await tx.query("SELECT pg_advisory_xact_lock(hashtext('herald.setup'))");
    if (!(await setupNeeded(tx))) {
      throw setupDone();
    }
    const account = await insertAccount(tx, { id: randomUUID(), name: (input.account_name as string).trim() });
    return insertValidUser(tx, passwords, account.id, input);
  });
}

/**
 * Checks an email and password. Every failure is the same answer, taking the
 * same time, so it tells nothing about which emails have users.
 */
export async function checkCredentials(db: Queryable, passwords: PasswordHasher, email: unknown, password: unknown): Promise<q.UserRow> {
  const fail = () => new HeraldError('invalid_credentials', 'the email or the password is wrong; check both and try again');
  if (typeof email !== 'string' || typeof password !== 'string' || password.length > PASSWORD_MAX) throw fail();
  const user = await q.findUserByEmail(db, email.trim());
  const matches = await passwords.verify(password, user?.password_hash ?? (await passwords.decoyHash()));
  if (!user || !matches) throw fail();
  return user;
}

export async function setUserPassword(db: Db, passwords: PasswordHasher, idOrEmail: string, password: unknown): Promise<q.UserRow> {
  const errors = passwordErrors(password);
  if (errors.length) throw invalid(errors);
  const user = await findUserOrFail(db, idOrEmail);
  await q.setPasswordHash(db, user.id, await passwords.hash(password as string));
  return user;
}

export async function deleteUser(db: Queryable, idOrEmail: string): Promise<q.UserRow> {
  const user = await findUserOrFail(db, idOrEmail);
  await q.deleteUser(db, user.id);
  return user;
}

async function findUserOrFail(db: Queryable, idOrEmail: string): Promise<q.UserRow> {
  const user = await q.findUser(db, idOrEmail);
  if (!user) throw new HeraldError('not_found', `no user with id or email "${idOrEmail}"; list them with: herald users list`);
  return user;
}

// Sessions

const hashToken = (token: string) => createHash('sha256').update(token).digest();

/** Starts a session; the token goes into the cookie and nowhere else. */
export async function startSession(
  db: Queryable,
  userId: string,
  now: Date,
  settings: PanelAuthConfig,
): Promise<{ token: string; sessionId: string; expiresAt: Date }> {
  const token = randomBytes(32).toString('base64url');
  const sessionId = randomUUID();
  const expiresAt = new Date(now.getTime() + settings.sessionMaxMs);
  // Ended sessions are swept by the maintainer; findSession never accepts one.
  await q.insertSession(db, { id: sessionId, userId, tokenHash: hashToken(token), now, expiresAt });
  return { token, sessionId, expiresAt };
}

/**
 * The live session of a cookie's token, or undefined. Every use is recorded
 * (one statement finds and touches it), so a session ends exactly
 * `sessionIdleMs` after its last use, and exactly `sessionMaxMs` after
 * sign-in however much it is used. Panel traffic is a person's clicks: a
 * write per request costs nothing worth saving.
 */
export async function findSession(db: Queryable, token: string, now: Date, settings: PanelAuthConfig): Promise<q.SessionRow | undefined> {
  if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return undefined;
  return q.useLiveSession(db, hashToken(token), now, new Date(now.getTime() - settings.sessionIdleMs));
}

export async function endSession(db: Queryable, sessionId: string): Promise<void> {
  await q.deleteSession(db, sessionId);
}

/**
 * The CSRF token of a session: an HMAC of its cookie token. Only a page that
 * can read Herald's responses learns it (GET /v1/session), and it cannot be
 * turned back into the cookie.
 */
export function csrfTokenFor(sessionToken: string): string {
  return createHmac('sha256', sessionToken).update('herald csrf v1').digest('base64url');
}

export function csrfTokenMatches(sessionToken: string, sent: string | undefined): boolean {
  if (!sent) return false;
  const expected = Buffer.from(csrfTokenFor(sessionToken));
  const actual = Buffer.from(sent);
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

export const userJson = (u: q.UserRow) => ({
  id: u.id,
  account_id: u.account_id,
  email: u.email,
  name: u.name,
  created_at: u.created_at.toISOString(),
});
