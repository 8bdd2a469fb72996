import type { ApiKeyRow } from '../storage/queries/api-keys.ts';

/**
 * API keys recently seen valid, so a busy API does not look up the same key
 * on every request (it was one of the two statements of a publish). Only live
 * keys are kept, and each for a short while: a key revoked through this
 * process is forgotten at once; one revoked elsewhere (another API process,
 * the CLI on PostgreSQL) stops working within KEY_CACHE_MS.
 * The presented key is still compared with the stored hash on every request.
 * One per process, built with the service deps (createServiceDeps), so the
 * admin socket's revocations reach the API's cache.
 */
export const KEY_CACHE_MS = 2_000;
const MAX_KEYS = 10_000;

interface Entry {
  row: ApiKeyRow;
  until: number;
}

export class ApiKeyCache {
  private readonly entries = new Map<string, Entry>();

  get(prefix: string, now: number): ApiKeyRow | undefined {
    const entry = this.entries.get(prefix);
    if (!entry) return undefined;
    if (entry.until > now) return entry.row;
    this.entries.delete(prefix);
    return undefined;
  }

  remember(row: ApiKeyRow, now: number): void {
    if (row.revoked_at) return;
    if (this.entries.size >= MAX_KEYS) this.entries.clear();
    this.entries.set(row.prefix, { row, until: now + KEY_CACHE_MS });
  }

  /** After a revocation in this process: the key fails from the very next request. */
  forget(prefix: string): void {
    this.entries.delete(prefix);
  }
}
