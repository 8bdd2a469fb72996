import { isUuid } from '../core/ids.ts';
import { invalidField } from '../errors.ts';
import type { PageAfter } from '../storage/queries/paging.ts';

export const pageQueryProperties = {
  limit: { type: 'string', pattern: '^[0-9]+$', description: 'Items per page, 1 to 100 (default 20).' },
  cursor: { type: 'string', description: 'The next_cursor of the previous page.' },
} as const;

export const pageQuerySchema = { type: 'object', additionalProperties: false, properties: pageQueryProperties } as const;

function parseLimit(limit: string | undefined, max = 100): number {
  const n = limit === undefined ? 20 : Number(limit);
  if (n < 1 || n > max) throw invalidField('query.limit', `must be between 1 and ${max}`);
  return n;
}

const badCursor = () => invalidField('query.cursor', 'is not a cursor returned by this API; start again without it');

/** A cursor that is a bare id names no row of the account (deleted since): there is no telling where the page after it starts. */
export const staleCursor = () => invalidField('query.cursor', 'names nothing in this account (deleted since?); start again without it');

/**
 * Pages ordered by creation, oldest first. The cursor carries the last row's
 * creation time (to the microsecond) and id (opaque base64url), so paging goes
 * on when that row has been deleted since the previous page. A bare id, the
 * older form, is still read.
 */
export function parsePage(query: { limit?: string; cursor?: string }): { limit: number; after?: PageAfter } {
  const limit = parseLimit(query.limit);
  if (query.cursor === undefined) return { limit };
  if (isUuid(query.cursor)) return { limit, after: { id: query.cursor } };
  const m = /^(\d{1,17})\.([0-9a-f-]{36})$/i.exec(Buffer.from(query.cursor, 'base64url').toString('latin1'));
  if (!m || !isUuid(m[2])) throw badCursor();
  return { limit, after: { micros: m[1]!, id: m[2]! } };
}

/** Fetch one extra row to know whether a next page exists; `position` is the row's creation time in microseconds. */
export function pageOf<T extends { id: string; position: string }>(rows: T[], limit: number): { items: Omit<T, 'position'>[]; next_cursor: string | null } {
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  const next_cursor = rows.length > limit && last ? Buffer.from(`${last.position}.${last.id}`, 'latin1').toString('base64url') : null;
  return { items: page.map(({ position: _, ...row }) => row), next_cursor };
}

/**
 * Pages ordered newest first, by a time and an id. The cursor carries both
 * (opaque base64url), so paging goes on even when the row it names has been
 * deleted (pruned attempts, say) since the previous page.
 */
export function parseTimePage(query: { limit?: string; cursor?: string }): { limit: number; before?: { at: Date; id: string } } {
  const limit = parseLimit(query.limit);
  if (query.cursor === undefined) return { limit };
  const m = /^(\d{1,15})\.([0-9a-f-]{36})$/i.exec(Buffer.from(query.cursor, 'base64url').toString('latin1'));
  if (!m || !isUuid(m[2])) throw badCursor();
  return { limit, before: { at: new Date(Number(m[1])), id: m[2]! } };
}

export function timePageOf<T extends { id: string }>(rows: T[], limit: number, at: (row: T) => Date): { items: T[]; next_cursor: string | null } {
  const items = rows.slice(0, limit);
  const last = items[items.length - 1];
  const next_cursor = rows.length > limit && last ? Buffer.from(`${at(last).getTime()}.${last.id}`, 'latin1').toString('base64url') : null;
  return { items, next_cursor };
}
