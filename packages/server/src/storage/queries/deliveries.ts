import type { Queryable } from '../db.ts';

/** The channel on which new due work is announced to idle dispatchers. */
export const DELIVERIES_CHANNEL = 'herald_deliveries';

export type DeliveryState = 'pending' | 'succeeded' | 'failed' | 'skipped';

export interface DeliverySummaryRow {
  id: string;
  endpoint_id: string;
  state: DeliveryState;
  attempts: number;
  next_attempt_at: Date;
  last_status: number | null;
  last_error: string | null;
  created_at: Date;
  updated_at: Date;
}

/**
 * Creates one delivery per endpoint of the account subscribed to the event's
 * type: `pending` for an enabled endpoint, `skipped` for a disabled one (kept,
 * never dropped, so it can be recovered later). Returns how many are pending.
 */
export async function fanOutEvent(db: Queryable, e: { accountId: string; eventId: string; type: string; now: Date }): Promise<number> {
  const { rows } = await db.query<{ state: DeliveryState }>(
    `INSERT INTO deliveries (id, account_id, event_id, endpoint_id, state, next_attempt_at, created_at, updated_at)
     SELECT gen_random_uuid(), $1, $2, ep.id, CASE WHEN ep.enabled THEN 'pending' ELSE 'skipped' END, $4, $4, $4
       FROM endpoints ep
      WHERE ep.account_id = $1 AND $3 = ANY (ep.event_types)
     RETURNING state`,
    [e.accountId, e.eventId, e.type, e.now],
  );
  return rows.filter((r) => r.state === 'pending').length;
}

export async function listDeliveriesOfEvent(db: Queryable, accountId: string, eventId: string): Promise<DeliverySummaryRow[]> {
  const { rows } = await db.query<DeliverySummaryRow>(
    `SELECT id, endpoint_id, state, attempts, next_attempt_at, last_status, last_error, created_at, updated_at
       FROM deliveries WHERE account_id = $1 AND event_id = $2 ORDER BY created_at, endpoint_id`,
    [accountId, eventId],
  );
  return rows;
}

/** Wakes idle dispatchers; inside a transaction, the notification leaves at commit. */
export async function notifyDeliveries(db: Queryable): Promise<void> {
  await db.query(`SELECT pg_notify('${DELIVERIES_CHANNEL}', '')`);
}
