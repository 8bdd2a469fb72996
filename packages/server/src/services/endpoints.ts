import { randomUUID } from 'node:crypto';
import { DEFAULT_LIMITS } from '../config.ts';
import { HeraldError, invalidField } from '../errors.ts';
import { checkHeaders } from '../core/custom-headers.ts';
import { parseEndpointUrl } from '../core/endpoint-url.ts';
import { checkMetadata } from '../core/metadata.ts';
import { encryptSecret, generateSigningSecret, maskSecret } from '../core/secrets.ts';
import type { Queryable } from '../storage/db.ts';
import { lockAccount } from '../storage/queries/accounts.ts';
import { getEventTypes } from '../storage/queries/event-types.ts';
import * as q from '../storage/queries/endpoints.ts';
import type { ServiceDeps } from './deps.ts';

export interface EndpointInput {
  url?: unknown;
  description?: unknown;
  event_types?: unknown;
  rate_limit?: unknown;
  headers?: unknown;
  metadata?: unknown;
}

/** The bounds of an endpoint's rate limit, in requests per second. */
export const RATE_LIMIT_MIN = 1;
export const RATE_LIMIT_MAX = 10_000;

/**
 * An endpoint's rate limit: a whole number of requests per second, or null
 * for none. Undefined (left out) stays undefined, so an update leaves it as is.
 */
export function checkRateLimit(value: unknown): number | null | undefined {
  if (value === undefined || value === null) return value;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < RATE_LIMIT_MIN || value > RATE_LIMIT_MAX) {
    throw invalidField(
      'rate_limit',
      `must be a whole number of requests per second from ${RATE_LIMIT_MIN} to ${RATE_LIMIT_MAX.toLocaleString('en')}, or null for no limit`,
    );
  }
  return value;
}

/** Checks that every subscribed type is in the catalog; names the unknown ones. */
async function checkEventTypes(db: Queryable, value: unknown): Promise<string[]> {
  if (!Array.isArray(value) || value.length === 0 || value.some((t) => typeof t !== 'string')) {
    throw invalidField('event_types', 'must be a non-empty list of event type names, e.g. ["alarm.created"]');
  }
  const wanted = [...new Set(value as string[])];
  const known = new Set((await getEventTypes(db, wanted)).map((t) => t.name));
  const unknown = wanted.filter((t) => !known.has(t));
  if (unknown.length > 0) {
    throw invalidField(
      'event_types',
      `unknown event type${unknown.length > 1 ? 's' : ''} ${unknown.map((t) => `"${t}"`).join(', ')}; list the catalog with GET /v1/event-types`,
      'unknown_event_type',
    );
  }
  return wanted.sort();
}

function checkDescription(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length > 500) throw invalidField('description', 'must be a string of at most 500 characters');
  return value;
}

/** Creates an endpoint with a new signing secret; the secret is returned this once only. */
export async function createEndpoint(
  deps: ServiceDeps,
  accountId: string,
  input: EndpointInput,
): Promise<{ endpoint: q.EndpointRow; secret: string }> {
  const url = parseEndpointUrl(input.url, deps.addresses);
  const description = checkDescription(input.description) ?? '';
  const rateLimit = checkRateLimit(input.rate_limit) ?? null;
  const eventTypes = await checkEventTypes(deps.db, input.event_types);
  const id = randomUUID();
  const headers = checkHeaders(input.headers, { encryptionKey: deps.encryptionKey, endpointId: id, previous: [] });
  const metadata = checkMetadata(input.metadata);
  const secret = generateSigningSecret();
  const limit = (deps.limits ?? DEFAULT_LIMITS).endpointsPerAccount;
  const endpoint = await deps.db.transaction(async (tx) => {
    // Counted under the account's lock: two creates at once cannot both take the last place.
    await lockAccount(tx, accountId);
    const count = await q.countEndpoints(tx, accountId);
    if (count >= limit) {
      throw new HeraldError(
        'limit_exceeded',
        `this account has ${count} endpoints, the most one account may have (HERALD_MAX_ENDPOINTS_PER_ACCOUNT = ${limit}); delete one it no longer needs, or ask your operator to raise HERALD_MAX_ENDPOINTS_PER_ACCOUNT`,
        { limit: { setting: 'HERALD_MAX_ENDPOINTS_PER_ACCOUNT', value: limit } },
      );
    }
    return q.insertEndpoint(tx, {
      id,
      accountId,
      url,
      description,
      eventTypes,
      rateLimit,
      secretEncrypted: encryptSecret(deps.encryptionKey, secret, id),
      secretHint: maskSecret(secret),
      headers,
      metadata,
    });
  });
  return { endpoint, secret };
}

export async function updateEndpoint(deps: ServiceDeps, accountId: string, id: string, input: EndpointInput): Promise<q.EndpointRow> {
  const patch = {
    url: input.url === undefined ? undefined : parseEndpointUrl(input.url, deps.addresses),
    description: checkDescription(input.description),
    rateLimit: checkRateLimit(input.rate_limit),
    eventTypes: input.event_types === undefined ? undefined : await checkEventTypes(deps.db, input.event_types),
    metadata: checkMetadata(input.metadata),
  };
  if (input.headers === undefined) {
    const row = await q.updateEndpoint(deps.db, accountId, id, patch);
    if (!row) throw endpointNotFound(id);
    return row;
  }
  // A secret header given without its value keeps the stored one: read under
  // the row's lock, so a concurrent update cannot slip between.
  return deps.db.transaction(async (tx) => {
    const current = await q.lockEndpoint(tx, accountId, id);
    if (!current) throw endpointNotFound(id);
    const headers = checkHeaders(input.headers, { encryptionKey: deps.encryptionKey, endpointId: id, previous: current.headers ?? [] });
    return (await q.updateEndpoint(tx, accountId, id, { ...patch, headers }))!;
  });
}

export async function getEndpoint(deps: ServiceDeps, accountId: string, id: string): Promise<q.EndpointRow> {
  const row = await q.getEndpoint(deps.db, accountId, id);
  if (!row) throw endpointNotFound(id);
  return row;
}

export async function deleteEndpoint(deps: ServiceDeps, accountId: string, id: string): Promise<void> {
  if (!(await q.deleteEndpoint(deps.db, accountId, id))) throw endpointNotFound(id);
}

/** The same 404 whether the endpoint never existed or belongs to another account. */
export function endpointNotFound(id: string): HeraldError {
  return new HeraldError('not_found', `no endpoint with id ${id} in this account`);
}

/**
 * Replaces the signing secret. The old one is discarded; the
 * next attempt, even a retry of an older event, is signed with the new one.
 */
export async function rotateSecret(deps: ServiceDeps, accountId: string, id: string): Promise<{ endpoint: q.EndpointRow; secret: string }> {
  const secret = generateSigningSecret();
  const endpoint = await q.replaceSecret(deps.db, accountId, id, {
    secretEncrypted: encryptSecret(deps.encryptionKey, secret, id),
    secretHint: maskSecret(secret),
  });
  if (!endpoint) throw endpointNotFound(id);
  return { endpoint, secret };
}
