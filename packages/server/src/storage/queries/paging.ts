import type { Queryable } from '../db.ts';

const POSITION = `(extract(epoch FROM created_at) * 1000000)::bigint::text`;

/**
 * Keyset pages in creation order (oldest first) for tables with account_id,
 * created_at and id. Parameters: $1 the account, $2 the previous page's last
 * id (null: the first page), $3 that row's creation time in microseconds since
 * 1970, $4 the limit.
 */
function pageInCreationOrder(table: string, columns: string, filter = 'true'): string {
  return `SELECT ${columns}, ${POSITION} AS position
    FROM ${table}
   WHERE account_id = $1 AND (${filter})
     AND ($2::uuid IS NULL OR (created_at, id) > ('epoch'::timestamptz + $3::bigint * interval '1 microsecond', $2::uuid))
   ORDER BY created_at, id LIMIT $4`;
}

/**
 * One page of `table` in creation order. A cursor that is a bare id (the
 * form before 2026-11-24) carries no time: the row is looked up for it, and
 * when it is gone (deleted since) the answer is null, not an empty page, so
 * the caller can say so instead of ending the list there. `filter` narrows
 * the rows: a condition whose parameters are numbered from $5.
 */
export async function pageOfTable<T>(
  db: Queryable,
  table: string,
  columns: string,
  accountId: string,
  page: { limit: number | null; after?: PageAfter },
  filter?: { sql: string; params: unknown[] },
): Promise<Array<T & { position: string }> | null> {
  let after = page.after;
  if (after && after.micros === undefined) {
    const { rows } = await db.query<{ position: string }>(`SELECT ${POSITION} AS position FROM ${table} WHERE id = $1 AND account_id = $2`, [after.id, accountId]);
    if (!rows[0]) return null;
    after = { id: after.id, micros: rows[0].position };
  }
  return (
    await db.query<T & { position: string }>(pageInCreationOrder(table, columns, filter?.sql), [
      accountId,
      after?.id ?? null,
      after?.micros ?? null,
      page.limit,
      ...(filter?.params ?? []),
    ])
  ).rows;
}

/** Where a page starts: after this id, created at this microsecond since 1970. */
export interface PageAfter {
  id: string;
  /** Absent for a cursor that is a bare id (as cursors were before 2026-11-24): the row is looked up. */
  micros?: string;
}
