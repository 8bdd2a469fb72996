import type { Queryable } from '../db.ts';
import { pageOfTable, type PageAfter } from './paging.ts';
import { isUuid } from '../../core/ids.ts';

export interface ApiKeyRow {
  id: string;
  account_id: string;
  name: string;
  prefix: string;
  secret_hash: Buffer;
  created_at: Date;
  revoked_at: Date | null;
}

const COLUMNS = 'id, account_id, name, prefix, secret_hash, created_at, revoked_at';

export async function insertApiKey(
  db: Queryable,
  key: { id: string; accountId: string; name: string; prefix: string; hash: Buffer },
): Promise<ApiKeyRow> {
  const { rows } = await db.query<ApiKeyRow>(
    `INSERT INTO api_keys (id, account_id, name, prefix, secret_hash) VALUES ($1, $2, $3, $4, $5) RETURNING ${COLUMNS}`,
    [key.id, key.accountId, key.name, key.prefix, key.hash],
  );
  return rows[0]!;
}

export async function findApiKeyByPrefix(db: Queryable, prefix: string): Promise<ApiKeyRow | undefined> {
  return (await db.query<ApiKeyRow>(`SELECT ${COLUMNS} FROM api_keys WHERE prefix = $1`, [prefix])).rows[0];
}

export async function findApiKey(db: Queryable, accountId: string, id: string): Promise<ApiKeyRow | undefined> {
  return (await db.query<ApiKeyRow>(`SELECT ${COLUMNS} FROM api_keys WHERE account_id = $1 AND id = $2`, [accountId, id])).rows[0];
}

/**
 * An account's keys in creation order; a page of them when `page` is given
 * (after the previous page's last row). Null when the cursor is a bare id of
 * a key that no longer exists.
 */
export async function listApiKeys(db: Queryable, accountId: string, page?: { limit: number; after?: PageAfter }): Promise<Array<ApiKeyRow & { position: string }> | null> {
  return pageOfTable<ApiKeyRow>(db, 'api_keys', COLUMNS, accountId, { limit: page?.limit ?? null, after: page?.after });
}

/** Revokes by id or by visible prefix; returns the row, or undefined when none matched. */
export async function revokeApiKey(db: Queryable, idOrPrefix: string, accountId?: string): Promise<ApiKeyRow | undefined> {
  const byId = isUuid(idOrPrefix);
  const { rows } = await db.query<ApiKeyRow>(
    `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, now())
      WHERE ${byId ? 'id = $1::uuid' : 'prefix = $1'} AND ($2::uuid IS NULL OR account_id = $2::uuid)
      RETURNING ${COLUMNS}`,
    [idOrPrefix, accountId ?? null],
  );
  return rows[0];
}
