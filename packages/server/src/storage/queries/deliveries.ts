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

export async function listDeliveriesOfEvent(db: Queryable, accountId: string, eventId: string): Promise<DeliverySummaryRow[]> {
  const { rows } = await db.query<DeliverySummaryRow>(
    `SELECT id, endpoint_id, state, attempts, next_attempt_at, last_status, last_error, created_at, updated_at
       FROM deliveries WHERE account_id = $1 AND event_id = $2 ORDER BY created_at, endpoint_id`,
    [accountId, eventId],
  );
  return rows;
}

/** Wakes idle dispatchers. Sent on its own, outside any transaction that writes. */
export async function notifyDeliveries(db: Queryable): Promise<void> {
  await db.query(`SELECT pg_notify('${DELIVERIES_CHANNEL}', '')`);
}
