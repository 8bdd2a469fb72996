import { HeraldError, invalidField } from '../errors.ts';
import { databaseTime } from '../core/clock.ts';
import { countRecoverable, recoverDeliveries } from '../storage/queries/deliveries.ts';
import * as q from '../storage/queries/endpoints.ts';
import { skipPendingDeliveries } from '../storage/queries/record-results.ts';
import { findApiKey } from '../storage/queries/api-keys.ts';
import { findUser } from '../storage/queries/users.ts';
import type { Queryable } from '../storage/db.ts';
import { DEFAULT_RETENTION } from '../config.ts';
import type { ServiceDeps } from './deps.ts';
import { endpointNotFound } from './endpoints.ts';

/** Re-enables an endpoint; its failure streak starts again from zero. */
export async function enableEndpoint(deps: ServiceDeps, accountId: string, id: string): Promise<q.EndpointRow> {
  const row = await q.enableEndpoint(deps.db, accountId, id, deps.clock());
  if (!row) throw endpointNotFound(id);
  return row;
}

/** Who asks for a change by hand: a panel user or an API key of the account. */
export type Actor = { kind: 'user'; userId: string } | { kind: 'api_key'; keyId: string } | { kind: 'portal'; portalSessionId: string };

/** The actor as the endpoint records it: its kind, id and name as they are now. */
async function disabledBy(db: Queryable, accountId: string, actor: Actor): Promise<q.DisabledBy> {
  // Someone in a panel the platform embeds: Herald knows the session, not the person.
  if (actor.kind === 'portal') return { kind: 'portal', id: actor.portalSessionId, name: 'the embedded panel' };
  if (actor.kind === 'user') {
    const user = await findUser(db, actor.userId);
    return { kind: 'user', id: actor.userId, name: user?.name || user?.email || 'a user since deleted' };
  }
  const key = await findApiKey(db, accountId, actor.keyId);
  const name = key ? (key.name ? `${key.name} (${key.prefix})` : key.prefix) : 'a key since deleted';
  return { kind: 'api_key', id: actor.keyId, name };
}

/**
 * Disables an endpoint by hand. As with an automatic disable, nothing is sent
 * to it any more and its pending deliveries become `skipped`, kept for recovery.
 * The endpoint records who did it, so nobody blames Herald for it.
 */
export async function disableEndpoint(deps: ServiceDeps, accountId: string, id: string, reason: unknown, actor: Actor): Promise<q.EndpointRow> {
  if (reason !== undefined && (typeof reason !== 'string' || reason.length > 500)) {
    throw invalidField('reason', 'must be a string of at most 500 characters');
  }
  const now = deps.clock();
  return deps.db.transaction(async (tx) => {
    const by = await disabledBy(tx, accountId, actor);
    const row = await q.disableEndpoint(tx, accountId, id, { reason: (reason as string | undefined)?.trim() || 'disabled by hand', now, by });
    if (!row) throw endpointNotFound(id);
    await skipPendingDeliveries(tx, [id], now);
    return row;
  });
}

export interface RecoverResult {
  since: Date;
  dry_run: boolean;
  /** Deliveries that were (or, in a dry run, would be) sent again. */
  count: number;
}

/**
 * Sends again the skipped and failed deliveries of an endpoint created since
 * a time, each with a fresh set of attempts. A dry run only counts them, so
 * the user sees the number before confirming.
 */
export async function recoverEndpoint(
  deps: ServiceDeps,
  accountId: string,
  id: string,
  input: { since: unknown; dry_run?: unknown },
): Promise<RecoverResult> {
  const since = parseTime('since', input.since);
  const now = deps.clock();
  if (since.getTime() > now.getTime()) throw invalidField('since', 'is in the future; choose a time in the past');
  const dryRun = input.dry_run === true;
  const count = await deps.db.transaction(async (tx) => {
    const endpoint = await q.lockEndpoint(tx, accountId, id);
    if (!endpoint) throw endpointNotFound(id);
    checkWithinReach(deps, since, now);
    if (dryRun) return countRecoverable(tx, { accountId, endpointId: id, since });
    if (!endpoint.enabled) {
      throw new HeraldError('endpoint_disabled', 'the endpoint is disabled, so recovered deliveries would be skipped again; re-enable it first (POST /v1/endpoints/{id}/enable)');
    }
    return recoverDeliveries(tx, { accountId, endpointId: id, since, now: databaseTime(deps.clock) });
  });
  if (!dryRun && count > 0) deps.newWork.announce();
  return { since, dry_run: dryRun, count };
}

/**
 * How far back recovery reaches: failed and skipped deliveries are kept for
 * the undelivered retention, so anything older may be gone.
 */
export function recoveryReach(deps: Pick<ServiceDeps, 'retention'>, now: Date): { days: number; from: Date } {
  const days = (deps.retention ?? DEFAULT_RETENTION).undeliveredDays;
  return { days, from: new Date(now.getTime() - days * 86_400_000) };
}

/** Refuses a time further back than recovery reaches, saying how far back it does. */
function checkWithinReach(deps: ServiceDeps, since: Date, now: Date): void {
  const { days, from } = recoveryReach(deps, now);
  if (since.getTime() >= from.getTime()) return;
  const message =
    `is further back than recovery reaches: Herald keeps failed and skipped deliveries for ${days} day${days === 1 ? '' : 's'} ` +
    `(HERALD_RETENTION_UNDELIVERED_DAYS), so recovery reaches back to ${from.toISOString()}; choose that time or later`;
  throw new HeraldError('beyond_retention', `since: ${message}`, {
    errors: [{ field: 'since', message }],
    limit: { setting: 'HERALD_RETENTION_UNDELIVERED_DAYS', value: days },
  });
}

/** An RFC 3339 date-time with a zone, e.g. 2026-11-22T09:00:00Z. */
export function parseTime(field: string, value: unknown): Date {
  const message = 'must be a date-time with a time zone, e.g. 2026-11-22T09:00:00Z';
  if (typeof value !== 'string' || !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/i.test(value)) throw invalidField(field, message);
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) throw invalidField(field, message);
  return date;
}
