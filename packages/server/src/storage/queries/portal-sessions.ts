import type { Queryable } from '../db.ts';
import { textArray } from './array-literal.ts';

/** A portal session: its link, and once the link is opened, the session. */
export interface PortalSessionRow {
  id: string;
  account_id: string;
  account_name: string;
  read_only: boolean;
  allowed_origins: string[];
  accent_color: string | null;
  logo_url: string | null;
  hide_sign_out: boolean;
  session_seconds: number;
  created_at: Date;
  link_expires_at: Date;
  opened_at: Date | null;
  expires_at: Date;
}

const COLUMNS = `p.id, p.account_id, a.name AS account_name, p.read_only, p.allowed_origins, p.accent_color, p.logo_url,
  p.hide_sign_out, p.session_seconds, p.created_at, p.link_expires_at, p.opened_at, p.expires_at`;

export async function insertPortalSession(
  db: Queryable,
  row: {
    id: string;
    accountId: string;
    linkHash: Buffer;
    readOnly: boolean;
    allowedOrigins: readonly string[];
    accentColor: string | null;
    logoUrl: string | null;
    hideSignOut: boolean;
    sessionSeconds: number;
    now: Date;
    linkExpiresAt: Date;
  },
): Promise<PortalSessionRow> {
  const { rows } = await db.query<PortalSessionRow>(
    `WITH p AS (
       INSERT INTO portal_sessions (id, account_id, link_hash, read_only, allowed_origins, accent_color, logo_url, hide_sign_out,
                                    session_seconds, created_at, link_expires_at, expires_at)
       VALUES ($1, $2, $3, $4, $5::text[], $6, $7, $8, $9, $10, $11, $11)
       RETURNING *)
     SELECT ${COLUMNS} FROM p JOIN accounts a ON a.id = p.account_id`,
    [
      row.id,
      row.accountId,
      row.linkHash,
      row.readOnly,
      textArray(row.allowedOrigins),
      row.accentColor,
      row.logoUrl,
      row.hideSignOut,
      row.sessionSeconds,
      row.now,
      row.linkExpiresAt,
    ],
  );
  return rows[0]!;
}

/**
 * Opens a link: matches only a link not opened yet and not expired, and
 * turns it into a session in the same statement, so of two opens at once
 * exactly one gets the session.
 */
export async function openPortalLink(db: Queryable, linkHash: Buffer, tokenHash: Buffer, now: Date): Promise<PortalSessionRow | undefined> {
  return (
    await db.query<PortalSessionRow>(
      `WITH p AS (
         UPDATE portal_sessions
            SET token_hash = $2, opened_at = $3, expires_at = $3::timestamptz + session_seconds * interval '1 second'
          WHERE link_hash = $1 AND opened_at IS NULL AND link_expires_at > $3
         RETURNING *)
       SELECT ${COLUMNS} FROM p JOIN accounts a ON a.id = p.account_id`,
      [linkHash, tokenHash, now],
    )
  ).rows[0];
}

/** A link whatever its state: to say why it cannot be opened. */
export async function findPortalLink(db: Queryable, linkHash: Buffer): Promise<PortalSessionRow | undefined> {
  return (await db.query<PortalSessionRow>(`SELECT ${COLUMNS} FROM portal_sessions p JOIN accounts a ON a.id = p.account_id WHERE p.link_hash = $1`, [linkHash])).rows[0];
}

/** The live session of a token, or undefined. */
export async function findLivePortalSession(db: Queryable, tokenHash: Buffer, now: Date): Promise<PortalSessionRow | undefined> {
  return (
    await db.query<PortalSessionRow>(
      `SELECT ${COLUMNS} FROM portal_sessions p JOIN accounts a ON a.id = p.account_id
        WHERE p.token_hash = $1 AND p.opened_at IS NOT NULL AND p.expires_at > $2`,
      [tokenHash, now],
    )
  ).rows[0];
}

/** Sign-out: the session ends at once. */
export async function endPortalSession(db: Queryable, id: string, now: Date): Promise<void> {
  await db.query('UPDATE portal_sessions SET expires_at = LEAST(expires_at, $2) WHERE id = $1', [id, now]);
}

/**
 * Deletes up to `limit` rows that ended before `before`. Kept a while after
 * they end, so that opening a used link again still says it was used.
 */
export async function deleteEndedPortalSessions(db: Queryable, before: Date, limit: number): Promise<number> {
  return (
    (
      await db.query(
        `DELETE FROM portal_sessions WHERE id IN (SELECT id FROM portal_sessions WHERE expires_at < $1 ORDER BY expires_at LIMIT $2)`,
        [before, limit],
      )
    ).rowCount ?? 0
  );
}

/** A live session by id (the panel asking about its own). */
export async function findLivePortalSessionById(db: Queryable, id: string, now: Date): Promise<PortalSessionRow | undefined> {
  return (
    await db.query<PortalSessionRow>(
      `SELECT ${COLUMNS} FROM portal_sessions p JOIN accounts a ON a.id = p.account_id
        WHERE p.id = $1 AND p.opened_at IS NOT NULL AND p.expires_at > $2`,
      [id, now],
    )
  ).rows[0];
}
