import type { Queryable } from '../db.ts';

export type ReplayState = 'running' | 'completed' | 'canceled';

export interface ReplayRow {
  id: string;
  account_id: string;
  state: ReplayState;
  filter: Record<string, unknown>;
  endpoint_id: string | null;
  total: number;
  done: number;
  deliveries: number;
  skipped_disabled: number;
  skipped_unsubscribed: number;
  after_created_at: Date | null;
  after_id: string | null;
  created_by_key_id: string | null;
  created_by_user_id: string | null;
  /** The API key's name or the user's name (or email), while they exist. */
  created_by_name: string | null;
  created_at: Date;
  updated_at: Date;
  finished_at: Date | null;
}

const COLUMNS = `r.id, r.account_id, r.state, r.filter, r.endpoint_id, r.total, r.done, r.deliveries, r.skipped_disabled, r.skipped_unsubscribed,
  r.after_created_at, r.after_id, r.created_by_key_id, r.created_by_user_id,
  COALESCE(k.name, NULLIF(u.name, ''), u.email) AS created_by_name, r.created_at, r.updated_at, r.finished_at`;
const FROM = `replays r LEFT JOIN api_keys k ON k.id = r.created_by_key_id LEFT JOIN users u ON u.id = r.created_by_user_id`;

export async function insertReplay(
  db: Queryable,
  p: {
    id: string;
    accountId: string;
    filter: Record<string, unknown>;
    endpointId: string | null;
    total: number;
    createdByKeyId: string | null;
    createdByUserId: string | null;
    now: Date;
  },
): Promise<void> {
  await db.query(
    `INSERT INTO replays (id, account_id, state, filter, endpoint_id, total, created_by_key_id, created_by_user_id, created_at, updated_at)
     VALUES ($1, $2, 'running', $3::jsonb, $4, $5, $6, $7, $8, $8)`,
    [p.id, p.accountId, JSON.stringify(p.filter), p.endpointId, p.total, p.createdByKeyId, p.createdByUserId, p.now],
  );
}

export async function getReplay(db: Queryable, accountId: string, id: string): Promise<ReplayRow | undefined> {
  return (await db.query<ReplayRow>(`SELECT ${COLUMNS} FROM ${FROM} WHERE r.account_id = $1 AND r.id = $2`, [accountId, id])).rows[0];
}

/** One page of an account's replays, newest first. */
export async function listReplays(db: Queryable, p: { accountId: string; limit: number; before?: { at: Date; id: string } }): Promise<ReplayRow[]> {
  const { rows } = await db.query<ReplayRow>(
    `SELECT ${COLUMNS} FROM ${FROM}
      WHERE r.account_id = $1 AND ($2::timestamptz IS NULL OR (r.created_at, r.id) < ($2::timestamptz, $3::uuid))
      ORDER BY r.created_at DESC, r.id DESC LIMIT $4`,
    [p.accountId, p.before?.at ?? null, p.before?.id ?? null, p.limit],
  );
  return rows;
}

export async function countRunningReplays(db: Queryable, accountId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM replays WHERE account_id = $1 AND state = 'running'`, [accountId]);
  return rows[0]!.n;
}

/**
 * The running replay whose turn it is, locked for its next batch. SKIP
 * LOCKED: two processes never work on the same replay at once.
 */
export async function lockNextRunningReplay(db: Queryable): Promise<ReplayRow | undefined> {
  const { rows } = await db.query<ReplayRow>(
    `SELECT ${COLUMNS} FROM ${FROM}
      WHERE r.id = (SELECT id FROM replays WHERE state = 'running' ORDER BY turn LIMIT 1 FOR UPDATE SKIP LOCKED)`,
  );
  return rows[0];
}

/** Records a batch done: the position it reached and what it created, and puts the replay at the back of the turn. */
export async function advanceReplay(
  db: Queryable,
  p: { id: string; after: { at: Date; id: string }; events: number; deliveries: number; skippedDisabled: number; skippedUnsubscribed: number; now: Date },
): Promise<void> {
  await db.query(
    `UPDATE replays
        SET after_created_at = $2, after_id = $3, done = done + $4, deliveries = deliveries + $5,
            skipped_disabled = skipped_disabled + $6, skipped_unsubscribed = skipped_unsubscribed + $7,
            turn = nextval('replay_turn'), updated_at = $8
      WHERE id = $1`,
    [p.id, p.after.at, p.after.id, p.events, p.deliveries, p.skippedDisabled, p.skippedUnsubscribed, p.now],
  );
}

/** Ends a replay (completed: nothing left to select; canceled: stopped by a person). Returns false when it had ended already. */
export async function finishReplay(db: Queryable, p: { accountId: string; id: string; state: 'completed' | 'canceled'; now: Date }): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE replays SET state = $3, finished_at = $4, updated_at = $4 WHERE account_id = $1 AND id = $2 AND state = 'running'`,
    [p.accountId, p.id, p.state, p.now],
  );
  return rowCount > 0;
}

/**
 * New deliveries of some events of an account, due now: to `endpointId`
 * alone, or to every endpoint subscribed to each event's type. Only
 * enabled endpoints get one; the pairs passed over are counted (a disabled
 * endpoint; for one endpoint, an event of a type it does not subscribe to).
 * The events and endpoints are locked FOR KEY SHARE, as a foreign key would
 * (docs/decisions/0008): an event being deleted by retention, or an
 * endpoint being deleted, is waited for and then gets no delivery.
 */
export async function insertReplayDeliveries(
  db: Queryable,
  p: { accountId: string; eventIds: readonly string[]; endpointId: string | null; now: Date | null },
): Promise<{ created: number; skippedDisabled: number; skippedUnsubscribed: number }> {
  const { rows } = await db.query<{ created: number; skipped_disabled: number; skipped_unsubscribed: number }>(
    `WITH t AS (SELECT COALESCE($4::timestamptz, now()) AS now),
     ev AS (
       SELECT e.account_id, e.id, e.type FROM events e WHERE e.account_id = $1 AND e.id = ANY ($2::uuid[]) FOR KEY SHARE
     ), ep AS (
       SELECT x.id, x.enabled, x.event_types FROM endpoints x
        WHERE x.account_id = $1 AND ($3::uuid IS NULL OR x.id = $3) FOR KEY SHARE
     ), pairs AS (
       SELECT ev.account_id, ev.id AS event_id, ep.id AS endpoint_id, ep.enabled, ev.type = ANY (ep.event_types) AS subscribed
         FROM ev CROSS JOIN ep
     ), ins AS (
       INSERT INTO deliveries (id, account_id, event_id, endpoint_id, state, next_attempt_at, created_at, updated_at)
       SELECT herald_uuid_v7(t.now), pairs.account_id, pairs.event_id, pairs.endpoint_id, 'pending', t.now, t.now, t.now
         FROM pairs, t WHERE pairs.enabled AND pairs.subscribed
       RETURNING 1
     )
     SELECT (SELECT count(*) FROM ins)::int AS created,
            (SELECT count(*) FROM pairs WHERE NOT enabled AND subscribed)::int AS skipped_disabled,
            (SELECT count(*) FROM pairs WHERE NOT subscribed AND $3::uuid IS NOT NULL)::int AS skipped_unsubscribed`,
    [p.accountId, p.eventIds, p.endpointId, p.now],
  );
  const r = rows[0]!;
  return { created: r.created, skippedDisabled: r.skipped_disabled, skippedUnsubscribed: r.skipped_unsubscribed };
}

/** The endpoints a replay may send to: for batch sizing, so that no batch passes the deliveries-per-transaction limit. */
export async function countReplayTargets(db: Queryable, accountId: string, endpointId: string | null): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM endpoints WHERE account_id = $1 AND ($2::uuid IS NULL OR id = $2) AND enabled`,
    [accountId, endpointId],
  );
  return rows[0]!.n;
}
