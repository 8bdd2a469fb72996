import type { Queryable } from '../db.ts';

/** How long a key is remembered (as Stripe does); the maintainer sweeps older ones. */
export const IDEMPOTENCY_KEY_TTL_MS = 24 * 3_600_000;

export interface IdempotencyRow {
  request_hash: Buffer;
  status_code: number | null;
  response_encrypted: Buffer | null;
  created_at: Date;
}

/** Claims a key for a request; false when the key is already taken. */
export async function claimIdempotencyKey(db: Queryable, p: { accountId: string; key: string; requestHash: Buffer; now: Date }): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO idempotency_keys (account_id, key, request_hash, created_at) VALUES ($1, $2, $3, $4)
     ON CONFLICT (account_id, key) DO NOTHING`,
    [p.accountId, p.key, p.requestHash, p.now],
  );
  return rowCount > 0;
}

export async function getIdempotencyKey(db: Queryable, accountId: string, key: string): Promise<IdempotencyRow | undefined> {
  const { rows } = await db.query<IdempotencyRow>(
    'SELECT request_hash, status_code, response_encrypted, created_at FROM idempotency_keys WHERE account_id = $1 AND key = $2',
    [accountId, key],
  );
  return rows[0];
}

/**
 * Takes over a key whose request never finished (its process died): only
 * while it is still unfinished and as old as seen, so one caller wins.
 */
export async function takeOverIdempotencyKey(db: Queryable, p: { accountId: string; key: string; seenCreatedAt: Date; now: Date }): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE idempotency_keys SET created_at = $4
      WHERE account_id = $1 AND key = $2 AND status_code IS NULL AND created_at = $3`,
    [p.accountId, p.key, p.seenCreatedAt, p.now],
  );
  return rowCount > 0;
}

export async function completeIdempotencyKey(db: Queryable, p: { accountId: string; key: string; statusCode: number; responseEncrypted: Buffer }): Promise<void> {
  await db.query('UPDATE idempotency_keys SET status_code = $3, response_encrypted = $4 WHERE account_id = $1 AND key = $2', [
    p.accountId,
    p.key,
    p.statusCode,
    p.responseEncrypted,
  ]);
}

/** Frees a key whose request failed on Herald's side, so the client's retry runs. */
export async function releaseIdempotencyKey(db: Queryable, accountId: string, key: string): Promise<void> {
  await db.query('DELETE FROM idempotency_keys WHERE account_id = $1 AND key = $2 AND status_code IS NULL', [accountId, key]);
}
