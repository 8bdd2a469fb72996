import { randomUUID } from 'node:crypto';
import { HeraldError, invalidField } from '../errors.ts';
import { apiKeyPrefix, generateApiKey, hashApiKey, hashesEqual } from '../core/secrets.ts';
import type { Queryable } from '../storage/db.ts';
import type { ApiKeyCache } from './api-key-cache.ts';
import { getAccount, insertAccount, type AccountRow } from '../storage/queries/accounts.ts';
import { findApiKeyByPrefix, insertApiKey, revokeApiKey, type ApiKeyRow } from '../storage/queries/api-keys.ts';
import { isUuid } from '../core/ids.ts';

export async function createAccount(db: Queryable, name: unknown): Promise<AccountRow> {
  if (typeof name !== 'string' || name.trim() === '') throw invalidField('name', 'is required, e.g. --name "Acme Logistics"');
  if (name.length > 200) throw invalidField('name', 'must be at most 200 characters');
  return insertAccount(db, { id: randomUUID(), name: name.trim() });
}

/** The operator's commands name an account by id: one that is not there is a not_found that says where to look. */
export async function requireAccount(db: Queryable, accountId: unknown): Promise<string> {
  if (!isUuid(accountId) || !(await getAccount(db, accountId))) {
    throw new HeraldError('not_found', `no account with id ${String(accountId)}; list accounts with: herald accounts list`);
  }
  return accountId;
}

/** Creates an API key; the returned `key` is the only time it exists in clear. */
export async function createApiKey(
  db: Queryable,
  accountId: string,
  name = 'default',
): Promise<{ key: string; row: ApiKeyRow }> {
  await requireAccount(db, accountId);
  const { key, prefix, hash } = generateApiKey();
  const row = await insertApiKey(db, { id: randomUUID(), accountId, name, prefix, hash });
  return { key, row };
}

/** One answer for every missing or wrong credential, so it tells nothing about which part was wrong. */
export const UNAUTHORIZED_DETAIL =
  'send a valid API key as "Authorization: Bearer hk_…" (create one with: herald keys create --account <id>), or sign in to the panel';

/** The token of an `Authorization: Bearer <token>` header. */
export function bearerToken(authorization: string | undefined): string | undefined {
  return /^Bearer\s+(\S+)$/i.exec(authorization ?? '')?.[1];
}

/**
 * Resolves an `Authorization: Bearer <key>` header to the key's account.
 * Every failure is the same 401, so a caller learns nothing about which keys exist.
 */
export async function authenticate(
  { db, apiKeys }: { db: Queryable; apiKeys: ApiKeyCache },
  authorization: string | undefined,
  now: number = performance.now(),
): Promise<{ accountId: string; keyId: string }> {
  const unauthorized = () => new HeraldError('unauthorized', UNAUTHORIZED_DETAIL);
  const key = bearerToken(authorization);
  const prefix = key ? apiKeyPrefix(key) : undefined;
  if (!key || !prefix) throw unauthorized();
  let row = apiKeys.get(prefix, now);
  if (!row) {
    row = await findApiKeyByPrefix(db, prefix);
    if (row) apiKeys.remember(row, now);
  }
  if (!row || row.revoked_at || !hashesEqual(row.secret_hash, hashApiKey(key))) throw unauthorized();
  return { accountId: row.account_id, keyId: row.id };
}

/** Creates an API key for the caller's own account (the API's POST /v1/api-keys). */
export async function createAccountApiKey(db: Queryable, accountId: string, name: unknown): Promise<{ key: string; row: ApiKeyRow }> {
  if (name !== undefined && (typeof name !== 'string' || name.trim() === '' || name.length > 100)) {
    throw invalidField('name', 'must be a label of 1 to 100 characters, e.g. "billing service"');
  }
  return createApiKey(db, accountId, (name as string | undefined)?.trim() ?? 'default');
}

/** Revokes one of the account's keys; another account's key is "not found", as if it did not exist. */
export async function revokeAccountApiKey({ db, apiKeys }: { db: Queryable; apiKeys: ApiKeyCache }, accountId: string, id: string): Promise<ApiKeyRow> {
  const row = await revokeApiKey(db, id, accountId);
  if (!row) throw new HeraldError('not_found', `no API key with id ${id} in this account`);
  apiKeys.forget(row.prefix);
  return row;
}
