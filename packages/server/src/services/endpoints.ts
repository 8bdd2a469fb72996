import { randomUUID } from 'node:crypto';
import { DEFAULT_LIMITS } from '../config.ts';
import { HeraldError, invalidField } from '../errors.ts';
import { checkHeaders } from '../core/custom-headers.ts';
import { parseEndpointUrl } from '../core/endpoint-url.ts';
import { checkMetadata } from '../core/metadata.ts';
import { encryptSecret, generateSecretFor, maskSecret, SIGNATURE_SCHEMES, type SignatureScheme } from '../core/secrets.ts';
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
  signature_scheme?: unknown;
}

/** The longest a replaced secret may stay valid after a rotation: 7 days. */
export const OVERLAP_MAX_SECONDS = 604_800;

/** A rotation's overlap in seconds: a whole number from 0 (none, the default) to 7 days. */
export function checkOverlap(value: unknown): number {
  if (value === undefined || value === null) return 0;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > OVERLAP_MAX_SECONDS) {
    throw invalidField(
      'overlap_seconds',
      `must be a whole number of seconds from 0 (the old secret stops at once) to ${OVERLAP_MAX_SECONDS} (7 days), e.g. 86400 for a day`,
    );
  }
  return value;
}

/** An endpoint's signature scheme; undefined (left out) stays undefined. */
export function checkScheme(value: unknown): SignatureScheme | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !(SIGNATURE_SCHEMES as readonly string[]).includes(value)) {
    throw invalidField('signature_scheme', `must be one of ${SIGNATURE_SCHEMES.map((s) => `"${s}"`).join(', ')}`);
  }
  return value as SignatureScheme;
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
  const scheme = checkScheme(input.signature_scheme) ?? 'herald';
  const eventTypes = await checkEventTypes(deps.db, input.event_types);
  const id = randomUUID();
  const headers = checkHeaders(input.headers, { encryptionKey: deps.encryptionKey, endpointId: id, previous: [] });
  const metadata = checkMetadata(input.metadata);
  const secret = generateSecretFor(scheme);
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
      signatureScheme: scheme,
      secretEncrypted: encryptSecret(deps.encryptionKey, secret, id),
      secretHint: maskSecret(secret),
      headers,
      metadata,
    });
  });
  return { endpoint, secret };
}

/**
 * Changes what the input names. A change of signature scheme comes with a
 * new secret of the scheme's form (the old one cannot key the other scheme),
 * returned this once as `secret`, and ends any rotation's overlap; naming
 * the scheme the endpoint already has changes nothing.
 */
export async function updateEndpoint(
  deps: ServiceDeps,
  accountId: string,
  id: string,
  input: EndpointInput,
): Promise<{ endpoint: q.EndpointRow; secret?: string }> {
  const patch = {
    url: input.url === undefined ? undefined : parseEndpointUrl(input.url, deps.addresses),
    description: checkDescription(input.description),
    rateLimit: checkRateLimit(input.rate_limit),
    eventTypes: input.event_types === undefined ? undefined : await checkEventTypes(deps.db, input.event_types),
    metadata: checkMetadata(input.metadata),
  };
  const scheme = checkScheme(input.signature_scheme);
  // Under the row's lock: a secret header given without its value keeps the
  // stored one, and a change of scheme is judged against the scheme it has,
  // so a concurrent update cannot slip between.
  return deps.db.transaction(async (tx) => {
    const current = await q.lockEndpoint(tx, accountId, id);
    if (!current) throw endpointNotFound(id);
    const headers =
      input.headers === undefined ? undefined : checkHeaders(input.headers, { encryptionKey: deps.encryptionKey, endpointId: id, previous: current.headers ?? [] });
    const secret = scheme !== undefined && scheme !== current.signature_scheme ? generateSecretFor(scheme) : undefined;
    const row = await q.updateEndpoint(tx, accountId, id, {
      ...patch,
      headers,
      scheme:
        secret === undefined
          ? undefined
          : { name: scheme!, secretEncrypted: encryptSecret(deps.encryptionKey, secret, id), secretHint: maskSecret(secret) },
    });
    if (!row) throw endpointNotFound(id);
    return secret === undefined ? { endpoint: row } : { endpoint: row, secret };
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
 * Replaces the signing secret with a new one of the endpoint's scheme; the
 * next attempt, even a retry of an older event, is signed with it. With no
 * overlap (the default) the old secret is discarded at once. With
 * `overlap_seconds`, the old one stays valid that long: every request
 * carries both signatures, the new first, so a receiver can switch secrets
 * at its own pace. Rotating again during an overlap keeps only the secret
 * being replaced: the one before it is erased.
 */
export async function rotateSecret(
  deps: ServiceDeps,
  accountId: string,
  id: string,
  input: { overlap_seconds?: unknown } = {},
): Promise<{ endpoint: q.EndpointRow; secret: string }> {
  const overlapSeconds = checkOverlap(input.overlap_seconds);
  return deps.db.transaction(async (tx) => {
    const current = await q.lockEndpoint(tx, accountId, id);
    if (!current) throw endpointNotFound(id);
    const secret = generateSecretFor(current.signature_scheme);
    const endpoint = await q.replaceSecret(tx, accountId, id, {
      secretEncrypted: encryptSecret(deps.encryptionKey, secret, id),
      secretHint: maskSecret(secret),
      previousUntil: overlapSeconds === 0 ? null : new Date(deps.clock().getTime() + overlapSeconds * 1000),
    });
    if (!endpoint) throw endpointNotFound(id);
    return { endpoint, secret };
  });
}

/** Ends a rotation's overlap now: the previous secret is erased and only the current one signs. Nothing to end is no error. */
export async function endSecretOverlap(deps: ServiceDeps, accountId: string, id: string): Promise<q.EndpointRow> {
  const endpoint = await q.erasePreviousSecret(deps.db, accountId, id);
  if (!endpoint) throw endpointNotFound(id);
  return endpoint;
}
