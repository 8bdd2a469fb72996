import type { Queryable } from '../storage/db.ts';
import type { ApiKeyRow } from '../storage/queries/api-keys.ts';

/**
 * API keys recently seen valid, per database, so a busy API does not look up
 * the same key on every request (it was one of the two statements of a
 * publish). Only live keys are kept, and each for a short while: a key revoked
 * through this process is forgotten at once; one revoked elsewhere (another
 * API process, the CLI on PostgreSQL) stops working within KEY_CACHE_MS.
 * The presented key is still compared with the stored hash on every request.
 */
export const KEY_CACHE_MS = 2_000;
const MAX_KEYS = 10_000;

interface Entry {
  row: ApiKeyRow;
  until: number;
}

const caches = new WeakMap<Queryable, Map<string, Entry>>();

function cacheOf(db: Queryable): Map<string, Entry> {
  let cache = caches.get(db);
  if (!cache) caches.set(db, (cache = new Map()));
  return cache;
}

export function cachedApiKey(db: Queryable, prefix: string, now: number): ApiKeyRow | undefined {
  const cache = cacheOf(db);
  const entry = cache.get(prefix);
  if (!entry) return undefined;
  if (entry.until > now) return entry.row;
  cache.delete(prefix);
  return undefined;
}

export function rememberApiKey(db: Queryable, row: ApiKeyRow, now: number): void {
  if (row.revoked_at) return;
  const cache = cacheOf(db);
  if (cache.size >= MAX_KEYS) cache.clear();
  cache.set(row.prefix, { row, until: now + KEY_CACHE_MS });
}

/** After a revocation in this process: the key fails from the very next request. */
export function forgetApiKey(db: Queryable, prefix: string): void {
  caches.get(db)?.delete(prefix);
}
