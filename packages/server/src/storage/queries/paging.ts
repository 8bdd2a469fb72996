/**
 * Keyset pages in creation order (oldest first) for tables with account_id,
 * created_at and id. Parameters: $1 the account, $2 the previous page's last
 * id (null: the first page), $3 that row's creation time in microseconds since
 * 1970 (null: look the row up, for cursors that carry only an id), $4 the limit.
 */
export function pageInCreationOrder(table: string, columns: string): string {
  return `SELECT ${columns}, (extract(epoch FROM created_at) * 1000000)::bigint::text AS position
    FROM ${table}
   WHERE account_id = $1
     AND ($2::uuid IS NULL OR (created_at, id) > (
           COALESCE('epoch'::timestamptz + $3::bigint * interval '1 microsecond',
                    (SELECT t.created_at FROM ${table} t WHERE t.id = $2::uuid AND t.account_id = $1)),
           $2::uuid))
   ORDER BY created_at, id LIMIT $4`;
}

/** Where a page starts: after this id, created at this microsecond since 1970. */
export interface PageAfter {
  id: string;
  /** Absent for a cursor that is a bare id (as cursors were before 2026-11-24): the row is looked up. */
  micros?: string;
}

export const pageParams = (accountId: string, page: { limit: number | null; after?: PageAfter }) => [
  accountId,
  page.after?.id ?? null,
  page.after?.micros ?? null,
  page.limit,
];
