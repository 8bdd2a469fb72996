import type { Db, Queryable } from '../db.ts';
import { isUuid } from '../../core/ids.ts';

export interface UserRow {
  id: string;
  account_id: string;
  email: string;
  name: string;
  password_hash: string;
  created_at: Date;
}

/** A live session with the user and account it belongs to. */
export interface SessionRow {
  session_id: string;
  user_id: string;
  user_email: string;
  user_name: string;
  account_id: string;
  account_name: string;
  last_seen_at: Date;
  expires_at: Date;
}

const USER_COLUMNS = 'id, account_id, email, name, password_hash, created_at';

export async function insertUser(
  db: Queryable,
  user: { id: string; accountId: string; email: string; name: string; passwordHash: string },
): Promise<UserRow> {
  const { rows } = await db.query<UserRow>(
    `INSERT INTO users (id, account_id, email, name, password_hash) VALUES ($1, $2, $3, $4, $5) RETURNING ${USER_COLUMNS}`,
    [user.id, user.accountId, user.email, user.name, user.passwordHash],
  );
  return rows[0]!;
}

export async function findUserByEmail(db: Queryable, email: string): Promise<UserRow | undefined> {
  return (await db.query<UserRow>(`SELECT ${USER_COLUMNS} FROM users WHERE lower(email) = lower($1)`, [email])).rows[0];
}

/** By id or by email. */
export async function findUser(db: Queryable, idOrEmail: string): Promise<UserRow | undefined> {
  if (isUuid(idOrEmail)) {
    return (await db.query<UserRow>(`SELECT ${USER_COLUMNS} FROM users WHERE id = $1`, [idOrEmail])).rows[0];
  }
  return findUserByEmail(db, idOrEmail);
}

/** Users oldest first, of one account or of all. */
export async function listUsers(db: Queryable, accountId?: string): Promise<UserRow[]> {
  return (
    await db.query<UserRow>(
      `SELECT ${USER_COLUMNS} FROM users WHERE ($1::uuid IS NULL OR account_id = $1::uuid) ORDER BY created_at, id`,
      [accountId ?? null],
    )
  ).rows;
}

export async function countUsers(db: Queryable): Promise<number> {
  return (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM users')).rows[0]!.n;
}

export async function deleteUser(db: Queryable, id: string): Promise<boolean> {
  return ((await db.query('DELETE FROM users WHERE id = $1', [id])).rowCount ?? 0) > 0;
}

/** A new password ends every session of the user. */
export async function setPasswordHash(db: Db, id: string, passwordHash: string): Promise<void> {
  await db.transaction(async (tx) => {
    await tx.query('UPDATE users SET password_hash = $2 WHERE id = $1', [id, passwordHash]);
    await tx.query('DELETE FROM sessions WHERE user_id = $1', [id]);
  });
}

export async function insertSession(
  db: Queryable,
  session: { id: string; userId: string; tokenHash: Buffer; now: Date; expiresAt: Date },
): Promise<void> {
  await db.query('INSERT INTO sessions (id, user_id, token_hash, created_at, last_seen_at, expires_at) VALUES ($1, $2, $3, $4, $4, $5)', [
    session.id,
    session.userId,
    session.tokenHash,
    session.now,
    session.expiresAt,
  ]);
}

/**
 * The session of a token, if it has neither expired (at `expires_at`) nor
 * been idle since `idleSince`; records this use as its last. GREATEST: two
 * requests at once never move the last use back.
 */
export async function useLiveSession(db: Queryable, tokenHash: Buffer, now: Date, idleSince: Date): Promise<SessionRow | undefined> {
  return (
    await db.query<SessionRow>(
      `UPDATE sessions s SET last_seen_at = GREATEST(s.last_seen_at, $2)
         FROM users u JOIN accounts a ON a.id = u.account_id
        WHERE u.id = s.user_id AND s.token_hash = $1 AND s.expires_at > $2 AND s.last_seen_at > $3
       RETURNING s.id AS session_id, u.id AS user_id, u.email AS user_email, u.name AS user_name,
                 a.id AS account_id, a.name AS account_name, s.last_seen_at, s.expires_at`,
      [tokenHash, now, idleSince],
    )
  ).rows[0];
}

export async function deleteSession(db: Queryable, id: string): Promise<void> {
  await db.query('DELETE FROM sessions WHERE id = $1', [id]);
}
