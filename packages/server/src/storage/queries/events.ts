import type { Queryable } from '../db.ts';

export interface EventRow {
  account_id: string;
  id: string;
  type: string;
  created_at: Date;
  body: Buffer;
  request_hash: Buffer;
}

const COLUMNS = 'account_id, id, type, created_at, body, request_hash';

/** Inserts the event unless its id exists; returns the row only when it was new. */
export async function insertEventIfNew(
  db: Queryable,
  e: { accountId: string; id: string; type: string; createdAt: Date; body: Buffer; requestHash: Buffer },
): Promise<EventRow | undefined> {
  const { rows } = await db.query<EventRow>(
    `INSERT INTO events (account_id, id, type, created_at, body, request_hash) VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (account_id, id) DO NOTHING RETURNING ${COLUMNS}`,
    [e.accountId, e.id, e.type, e.createdAt, e.body, e.requestHash],
  );
  return rows[0];
}

export async function getEvent(db: Queryable, accountId: string, id: string): Promise<EventRow | undefined> {
  return (await db.query<EventRow>(`SELECT ${COLUMNS} FROM events WHERE account_id = $1 AND id = $2`, [accountId, id])).rows[0];
}
