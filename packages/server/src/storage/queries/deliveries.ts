import type { Queryable } from '../db.ts';

/** The channel on which new due work is announced to idle dispatchers. */
export const DELIVERIES_CHANNEL = 'herald_deliveries';

export type DeliveryState = 'pending' | 'succeeded' | 'failed' | 'skipped';

export interface DeliverySummaryRow {
  id: string;
  event_id: string;
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
    `SELECT id, event_id, endpoint_id, state, attempts, next_attempt_at, last_status, last_error, created_at, updated_at
       FROM deliveries WHERE account_id = $1 AND event_id = $2 ORDER BY created_at, endpoint_id`,
    [accountId, eventId],
  );
  return rows;
}

/** Wakes idle dispatchers. Sent on its own, outside any transaction that writes. */
export async function notifyDeliveries(db: Queryable): Promise<void> {
  await db.query(`SELECT pg_notify('${DELIVERIES_CHANNEL}', '')`);
}

/** The skipped and failed deliveries of an endpoint created since a time: what a recovery would send again. */
export async function countRecoverable(db: Queryable, p: { accountId: string; endpointId: string; since: Date }): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM deliveries
      WHERE account_id = $1 AND endpoint_id = $2 AND state IN ('skipped', 'failed') AND created_at >= $3`,
    [p.accountId, p.endpointId, p.since],
  );
  return rows[0]!.n;
}

/**
 * Puts those deliveries back in the queue, due now, with a fresh set of
 * attempts (the attempt log keeps the earlier ones). Returns how many.
 */
export async function recoverDeliveries(db: Queryable, p: { accountId: string; endpointId: string; since: Date; now: Date | null }): Promise<number> {
  return (
    await db.query(
      `UPDATE deliveries SET state = 'pending', attempts = 0, next_attempt_at = COALESCE($4::timestamptz, now()), lost_attempts = 0,
              updated_at = COALESCE($4::timestamptz, now())
        WHERE account_id = $1 AND endpoint_id = $2 AND state IN ('skipped', 'failed') AND created_at >= $3`,
      [p.accountId, p.endpointId, p.since, p.now],
    )
  ).rowCount;
}

export interface DeliveryRow extends DeliverySummaryRow {
  /** It has a row in in_flight: a worker is sending it now. */
  in_flight: boolean;
}

const DELIVERY_COLUMNS = `id, event_id, endpoint_id, state, attempts, next_attempt_at,
  EXISTS (SELECT 1 FROM in_flight f WHERE f.delivery_id = deliveries.id) AS in_flight, last_status, last_error, created_at, updated_at`;

/** The delivery of one event to one endpoint, locked for a change. */
export async function lockDelivery(db: Queryable, p: { accountId: string; eventId: string; endpointId: string }): Promise<DeliveryRow | undefined> {
  const { rows } = await db.query<DeliveryRow>(
    `SELECT ${DELIVERY_COLUMNS} FROM deliveries
      WHERE account_id = $1 AND event_id = $2 AND endpoint_id = $3
      ORDER BY created_at DESC LIMIT 1 FOR UPDATE`,
    [p.accountId, p.eventId, p.endpointId],
  );
  return rows[0];
}

/** Makes a delivery due now (null: the database's now); a finished one starts a fresh set of attempts. */
export async function requeueDelivery(db: Queryable, id: string, now: Date | null): Promise<DeliveryRow> {
  const { rows } = await db.query<DeliveryRow>(
    `UPDATE deliveries
        SET attempts = CASE WHEN state = 'pending' THEN attempts ELSE 0 END,
            lost_attempts = CASE WHEN state = 'pending' THEN lost_attempts ELSE 0 END,
            state = 'pending', next_attempt_at = COALESCE($2::timestamptz, now()), updated_at = COALESCE($2::timestamptz, now())
      WHERE id = $1 RETURNING ${DELIVERY_COLUMNS}`,
    [id, now],
  );
  return rows[0]!;
}

/** A delivery for an event the endpoint has none for (it subscribed after the event, say), due now (null: the database's now). */
export async function insertDelivery(db: Queryable, p: { accountId: string; eventId: string; endpointId: string; now: Date | null }): Promise<DeliveryRow> {
  const { rows } = await db.query<DeliveryRow>(
    `WITH t AS (SELECT COALESCE($4::timestamptz, now()) AS now)
     INSERT INTO deliveries (id, account_id, event_id, endpoint_id, state, next_attempt_at, created_at, updated_at)
     SELECT herald_uuid_v7(t.now), $1, $2, $3, 'pending', t.now, t.now, t.now FROM t RETURNING ${DELIVERY_COLUMNS}`,
    [p.accountId, p.eventId, p.endpointId, p.now],
  );
  return rows[0]!;
}
