import type { StoredHeader } from '../../core/custom-headers.ts';
import type { SignatureScheme } from '../../core/secrets.ts';
import type { Db, Queryable } from '../db.ts';

/** An endpoint's origin (scheme, host, port) as the scheduler groups endpoints that share connections. */
export function originOf(url: string): string {
  return new URL(url).origin;
}
import { pageOfTable, type PageAfter } from './paging.ts';

export interface EndpointRow {
  id: string;
  account_id: string;
  url: string;
  description: string;
  event_types: string[];
  enabled: boolean;
  disabled_reason: string | null;
  disabled_at: Date | null;
  /** Who disabled it by hand: a panel user, an API key, or 'manual' (before Herald recorded who); NULL when Herald did or it is enabled. */
  disabled_by: 'user' | 'api_key' | 'manual' | null;
  disabled_by_id: string | null;
  /** The user's or key's name when it disabled the endpoint. */
  disabled_by_name: string | null;
  failure_streak: number;
  /** Requests per second the owner allows (NULL: no limit but the in-flight caps). */
  rate_limit: number | null;
  /** The automatic slow-down after a 429 or 503: no new request before this time. */
  throttled_until: Date | null;
  /** The automatic slow-down: at most this many requests in flight until it answers 2xx again (NULL: not slowed down). */
  throttle_limit: number | null;
  secret_encrypted: Buffer;
  secret_hint: string;
  /** Custom headers sent with every request (NULL: none); secret values sealed. */
  headers: StoredHeader[] | null;
  /** The owner's labels: string keys to string values. */
  metadata: Record<string, string>;
  /** How requests are signed: Herald's X-Service-* headers, or Standard Webhooks. */
  signature_scheme: SignatureScheme;
  /** After a rotation with an overlap: the replaced secret, which signs too until previous_secret_until (both NULL otherwise). */
  previous_secret_encrypted: Buffer | null;
  previous_secret_until: Date | null;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = `id, account_id, url, description, event_types, enabled, disabled_reason, disabled_at,
  disabled_by, disabled_by_id, disabled_by_name, failure_streak, rate_limit, throttled_until, throttle_limit, secret_encrypted, secret_hint,
  headers, metadata, signature_scheme, previous_secret_encrypted, previous_secret_until, created_at, updated_at`;

export async function insertEndpoint(
  db: Queryable,
  e: {
    id: string;
    accountId: string;
    url: string;
    description: string;
    eventTypes: string[];
    rateLimit?: number | null;
    secretEncrypted: Buffer;
    secretHint: string;
    headers?: StoredHeader[];
    metadata?: Record<string, string>;
    signatureScheme?: SignatureScheme;
  },
): Promise<EndpointRow> {
  const { rows } = await db.query<EndpointRow>(
    `INSERT INTO endpoints (id, account_id, url, origin, description, event_types, rate_limit, secret_encrypted, secret_hint, headers, metadata, signature_scheme)
     VALUES ($1, $2, $3, $8, $4, $5, $9, $6, $7, $10::jsonb, $11::jsonb, $12) RETURNING ${COLUMNS}`,
    [
      e.id,
      e.accountId,
      e.url,
      e.description,
      e.eventTypes,
      e.secretEncrypted,
      e.secretHint,
      originOf(e.url),
      e.rateLimit ?? null,
      headersJson(e.headers),
      JSON.stringify(e.metadata ?? {}),
      e.signatureScheme ?? 'herald',
    ],
  );
  return rows[0]!;
}

export async function countEndpoints(db: Queryable, accountId: string): Promise<number> {
  return (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM endpoints WHERE account_id = $1', [accountId])).rows[0]!.n;
}

/** How many of the account's endpoints (enabled or not) subscribe to each of `types`; a type none subscribes to is left out. */
export async function countSubscribers(db: Queryable, accountId: string, types: readonly string[]): Promise<Map<string, number>> {
  const { rows } = await db.query<{ type: string; n: number }>(
    `SELECT t.type, count(*)::int AS n FROM endpoints e CROSS JOIN LATERAL unnest(e.event_types) AS t (type)
      WHERE e.account_id = $1 AND t.type = ANY ($2::text[]) GROUP BY t.type`,
    [accountId, types],
  );
  return new Map(rows.map((r) => [r.type, r.n]));
}

export async function getEndpoint(db: Queryable, accountId: string, id: string): Promise<EndpointRow | undefined> {
  return (await db.query<EndpointRow>(`SELECT ${COLUMNS} FROM endpoints WHERE account_id = $1 AND id = $2`, [accountId, id])).rows[0];
}

/** What the endpoint list may be narrowed to. */
export interface EndpointFilter {
  /** Matches the URL or the description, ignoring case, anywhere in it. */
  search?: string;
  /** Every pair must be in the endpoint's metadata, exactly. */
  metadata?: Record<string, string>;
}

/**
 * One page in creation order, after the previous page's last row; each with
 * its `position` for the next cursor. Null when the cursor is a bare id of an
 * endpoint that no longer exists. A filter narrows the rows the page is
 * taken from, so pages of a filtered list follow on from one another as
 * pages of the whole list do.
 */
export async function listEndpoints(
  db: Queryable,
  accountId: string,
  page: { limit: number; after?: PageAfter },
  filter: EndpointFilter = {},
): Promise<Array<EndpointRow & { position: string }> | null> {
  const search = filter.search ? filter.search : null;
  const metadata = filter.metadata && Object.keys(filter.metadata).length > 0 ? JSON.stringify(filter.metadata) : null;
  if (search === null && metadata === null) return pageOfTable<EndpointRow>(db, 'endpoints', COLUMNS, accountId, page);
  return pageOfTable<EndpointRow>(db, 'endpoints', COLUMNS, accountId, page, {
    // strpos, not LIKE: the search is taken as it is, % and _ included.
    sql: `($5::text IS NULL OR strpos(lower(url), lower($5)) > 0 OR strpos(lower(description), lower($5)) > 0)
      AND ($6::jsonb IS NULL OR metadata @> $6::jsonb)`,
    params: [search, metadata],
  });
}

export async function updateEndpoint(
  db: Queryable,
  accountId: string,
  id: string,
  /**
   * Fields left undefined stay as they are; `rateLimit: null` removes the
   * limit. `scheme` comes with the new secret of its form, and erases a
   * previous secret still in its overlap: it was of the other scheme's form.
   */
  patch: {
    url?: string;
    description?: string;
    eventTypes?: string[];
    rateLimit?: number | null;
    /** The whole list, replaced; [] removes them all. */
    headers?: StoredHeader[];
    /** The whole object, replaced; {} removes it all. */
    metadata?: Record<string, string>;
    scheme?: { name: SignatureScheme; secretEncrypted: Buffer; secretHint: string };
  },
): Promise<EndpointRow | undefined> {
  const { rows } = await db.query<EndpointRow>(
    `UPDATE endpoints SET url = COALESCE($3, url), origin = COALESCE($6, origin), description = COALESCE($4, description),
        event_types = COALESCE($5, event_types), rate_limit = CASE WHEN $7 THEN $8::integer ELSE rate_limit END,
        headers = CASE WHEN $9 THEN $10::jsonb ELSE headers END, metadata = COALESCE($11::jsonb, metadata),
        signature_scheme = COALESCE($12, signature_scheme), secret_encrypted = COALESCE($13, secret_encrypted),
        secret_hint = COALESCE($14, secret_hint),
        previous_secret_encrypted = CASE WHEN $12::text IS NULL THEN previous_secret_encrypted END,
        previous_secret_until = CASE WHEN $12::text IS NULL THEN previous_secret_until END,
        updated_at = now()
      WHERE account_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
    [
      accountId,
      id,
      patch.url ?? null,
      patch.description ?? null,
      patch.eventTypes ?? null,
      patch.url === undefined ? null : originOf(patch.url),
      patch.rateLimit !== undefined,
      patch.rateLimit ?? null,
      patch.headers !== undefined,
      headersJson(patch.headers),
      patch.metadata === undefined ? null : JSON.stringify(patch.metadata),
      patch.scheme?.name ?? null,
      patch.scheme?.secretEncrypted ?? null,
      patch.scheme?.secretHint ?? null,
    ],
  );
  return rows[0];
}

/** Custom headers as the column holds them: NULL for none, so the claim carries nothing for most endpoints. */
function headersJson(headers: StoredHeader[] | undefined): string | null {
  return headers && headers.length > 0 ? JSON.stringify(headers) : null;
}

/**
 * Deletes an endpoint with its deliveries and attempt log, in one
 * transaction. No foreign key does this (docs/decisions/0008), so the order
 * matters, each statement seeing what committed before it started:
 * - the endpoint first: its row lock makes a concurrent publish wait (the
 *   fan-out locks the endpoints it inserts deliveries for, FOR KEY SHARE),
 *   then find it gone and insert none;
 * - its deliveries: this waits for a recorder writing results for them (it
 *   locks each delivery it logs an attempt for, FOR KEY SHARE), and a
 *   recorder that comes later finds them gone and logs nothing;
 * - its attempts last, so those that recorder logged go too.
 *
 * A recorder holding one of the deliveries may also need the endpoint's row
 * (to update its failure streak): PostgreSQL then breaks the deadlock by
 * failing one side, usually this one, and the delete starts over.
 */
export async function deleteEndpoint(db: Db, accountId: string, id: string): Promise<boolean> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await db.transaction(async (tx) => {
        // Each statement must see what committed before it started (above).
        await tx.query('SET TRANSACTION ISOLATION LEVEL READ COMMITTED');
        const deleted = (await tx.query('DELETE FROM endpoints WHERE account_id = $1 AND id = $2', [accountId, id])).rowCount > 0;
        if (!deleted) return false;
        await tx.query('DELETE FROM deliveries WHERE endpoint_id = $1', [id]);
        await tx.query('DELETE FROM attempts WHERE endpoint_id = $1', [id]);
        // Last: a claim holding this row holds none of the endpoint's deliveries any more.
        await tx.query('DELETE FROM endpoint_rates WHERE endpoint_id = $1', [id]);
        return true;
      });
    } catch (err) {
      if ((err as { code?: string }).code !== DEADLOCK_DETECTED || attempt >= 3) throw err;
    }
  }
}

/** SQLSTATE 40P01. */
const DEADLOCK_DETECTED = '40P01';

/**
 * Replaces the signing secret. With `previousUntil`, the replaced secret
 * (its ciphertext as it is: bound to the same endpoint) keeps signing until
 * then, taking the place of any earlier one; without, any previous secret is
 * erased too.
 */
export async function replaceSecret(
  db: Queryable,
  accountId: string,
  id: string,
  s: { secretEncrypted: Buffer; secretHint: string; previousUntil: Date | null },
): Promise<EndpointRow | undefined> {
  const { rows } = await db.query<EndpointRow>(
    `UPDATE endpoints SET secret_encrypted = $3, secret_hint = $4,
        previous_secret_encrypted = CASE WHEN $5::timestamptz IS NULL THEN NULL ELSE secret_encrypted END,
        previous_secret_until = $5::timestamptz, updated_at = now()
      WHERE account_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
    [accountId, id, s.secretEncrypted, s.secretHint, s.previousUntil],
  );
  return rows[0];
}

/** Ends a rotation's overlap now: the previous secret is erased. */
export async function erasePreviousSecret(db: Queryable, accountId: string, id: string): Promise<EndpointRow | undefined> {
  const { rows } = await db.query<EndpointRow>(
    `UPDATE endpoints SET previous_secret_encrypted = NULL, previous_secret_until = NULL,
        updated_at = CASE WHEN previous_secret_until IS NULL THEN updated_at ELSE now() END
      WHERE account_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
    [accountId, id],
  );
  return rows[0];
}

/**
 * Erases the previous secret of one endpoint if its overlap has ended by
 * `now`: the dispatcher calls it when an attempt finds one expired. Only
 * that one: a rotation since then has put a newer one in its place.
 */
export async function eraseExpiredPreviousSecret(db: Queryable, endpointId: string, until: Date, now: Date | null): Promise<void> {
  await db.query(
    `UPDATE endpoints SET previous_secret_encrypted = NULL, previous_secret_until = NULL
      WHERE id = $1 AND previous_secret_until = $2 AND previous_secret_until <= COALESCE($3::timestamptz, now())`,
    [endpointId, until, now],
  );
}

/** Erases up to `limit` previous secrets whose overlap has ended; returns how many. */
export async function sweepExpiredPreviousSecrets(db: Queryable, p: { now: Date | null; limit: number }): Promise<number> {
  return (
    await db.query(
      `UPDATE endpoints SET previous_secret_encrypted = NULL, previous_secret_until = NULL
        WHERE id IN (SELECT id FROM endpoints WHERE previous_secret_until <= COALESCE($1::timestamptz, now()) LIMIT $2)`,
      [p.now, p.limit],
    )
  ).rowCount;
}

/** Re-enables an endpoint: the failure streak starts again from zero. */
export async function enableEndpoint(db: Queryable, accountId: string, id: string, now: Date): Promise<EndpointRow | undefined> {
  const { rows } = await db.query<EndpointRow>(
    `UPDATE endpoints SET enabled = true, failure_streak = 0, disabled_reason = NULL, disabled_at = NULL,
        disabled_by = NULL, disabled_by_id = NULL, disabled_by_name = NULL, updated_at = $3
      WHERE account_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
    [accountId, id, now],
  );
  return rows[0];
}

/** Who disabled an endpoint by hand. */
export interface DisabledBy {
  kind: 'user' | 'api_key' | 'portal';
  id: string;
  name: string;
}

/** Disables an endpoint by hand with a reason; an already disabled one keeps its first reason, time and author. */
export async function disableEndpoint(
  db: Queryable,
  accountId: string,
  id: string,
  p: { reason: string; now: Date; by: DisabledBy },
): Promise<EndpointRow | undefined> {
  const { rows } = await db.query<EndpointRow>(
    `UPDATE endpoints
        SET disabled_reason = CASE WHEN enabled THEN $3 ELSE disabled_reason END,
            disabled_at = CASE WHEN enabled THEN $4 ELSE disabled_at END,
            disabled_by = CASE WHEN enabled THEN $5 ELSE disabled_by END,
            disabled_by_id = CASE WHEN enabled THEN $6::uuid ELSE disabled_by_id END,
            disabled_by_name = CASE WHEN enabled THEN $7 ELSE disabled_by_name END,
            enabled = false, updated_at = $4
      WHERE account_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
    [accountId, id, p.reason, p.now, p.by.kind, p.by.id, p.by.name],
  );
  return rows[0];
}

/** Whether the endpoint exists in this account, locked against a concurrent change. */
export async function lockEndpoint(db: Queryable, accountId: string, id: string): Promise<EndpointRow | undefined> {
  return (await db.query<EndpointRow>(`SELECT ${COLUMNS} FROM endpoints WHERE account_id = $1 AND id = $2 FOR UPDATE`, [accountId, id])).rows[0];
}
