import type { Queryable } from '../db.ts';

export interface AccountRow {
  id: string;
  name: string;
  created_at: Date;
}

export async function insertAccount(db: Queryable, account: { id: string; name: string }): Promise<AccountRow> {
  const { rows } = await db.query<AccountRow>('INSERT INTO accounts (id, name) VALUES ($1, $2) RETURNING id, name, created_at', [account.id, account.name]);
  return rows[0]!;
}

export async function listAccounts(db: Queryable): Promise<AccountRow[]> {
  return (await db.query<AccountRow>('SELECT id, name, created_at FROM accounts ORDER BY created_at, id')).rows;
}

export async function getAccount(db: Queryable, id: string): Promise<AccountRow | undefined> {
  return (await db.query<AccountRow>('SELECT id, name, created_at FROM accounts WHERE id = $1', [id])).rows[0];
}

/**
 * Locks the account's row until the transaction ends, so that checks on its
 * count of something (its endpoints) and the insert that follows are not
 * raced by the same request on another connection. NO KEY UPDATE: the
 * foreign-key checks of other inserts (events, keys) are not held up.
 */
export async function lockAccount(db: Queryable, id: string): Promise<boolean> {
  return (await db.query('SELECT 1 FROM accounts WHERE id = $1 FOR NO KEY UPDATE', [id])).rowCount > 0;
}
