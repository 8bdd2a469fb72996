import { invalidField } from '../errors.ts';

export const pageQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    limit: { type: 'string', pattern: '^[0-9]+$', description: 'Items per page, 1 to 100 (default 20).' },
    cursor: { type: 'string', description: 'The next_cursor of the previous page.' },
  },
} as const;

export function parsePage(query: { limit?: string; cursor?: string }): { limit: number; after?: string } {
  const limit = query.limit === undefined ? 20 : Number(query.limit);
  if (limit < 1 || limit > 100) throw invalidField('query.limit', 'must be between 1 and 100');
  if (query.cursor !== undefined && !/^[0-9a-f-]{36}$/i.test(query.cursor)) {
    throw invalidField('query.cursor', 'is not a cursor returned by this API; start again without it');
  }
  return { limit, after: query.cursor };
}

/** Fetch one extra row to know whether a next page exists. */
export function pageOf<T extends { id: string }>(rows: T[], limit: number): { items: T[]; next_cursor: string | null } {
  const items = rows.slice(0, limit);
  return { items, next_cursor: rows.length > limit ? items[items.length - 1]!.id : null };
}
