import { ApiError, request } from './client.ts';
import type {
  ApiKey,
  ApiKeyWithKey,
  Attempt,
  AttemptDetail,
  Endpoint,
  EndpointInput,
  EndpointWithSecret,
  EndpointStats,
  EventType,
  Page,
  RecoverResult,
  Session,
  StatsWindow,
} from './types.ts';

/** One function per API route the panel uses. */

const enc = encodeURIComponent;

/** First run: true while Herald has no user. A Herald without the route (404) needs no setup. */
export async function getSetup(): Promise<{ needed: boolean }> {
  try {
    return await request<{ needed: boolean }>('GET', '/v1/setup');
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) return { needed: false };
    throw err;
  }
}

export const setup = (body: { account_name: string; name: string; email: string; password: string; setup_token: string }) =>
  request<Session>('POST', '/v1/setup', { body, expect401: true });

/** The current session, or null when signed out. */
export async function getSession(): Promise<Session | null> {
  try {
    return await request<Session>('GET', '/v1/session', { expect401: true });
  } catch (err) {
    if (err instanceof ApiError && (err.status === 401 || err.status === 404)) return null;
    throw err;
  }
}

export const signIn = (email: string, password: string) =>
  request<Session>('POST', '/v1/session', { body: { email, password }, expect401: true });

export const signOut = () => request<void>('DELETE', '/v1/session', { expect401: true });

export const listEventTypes = (signal?: AbortSignal) => request<Page<EventType>>('GET', '/v1/event-types', { signal });

/** Every endpoint of the account, following the cursor (100 a page). */
/** Every endpoint, or those whose URL or description contains `search` (ignoring case). */
export async function listEndpoints(signal?: AbortSignal, search = ''): Promise<Endpoint[]> {
  const all: Endpoint[] = [];
  let cursor: string | null = null;
  do {
    const query: string = `?limit=100${search ? `&search=${enc(search)}` : ''}${cursor ? `&cursor=${enc(cursor)}` : ''}`;
    const page: Page<Endpoint> = await request<Page<Endpoint>>('GET', `/v1/endpoints${query}`, { signal });
    all.push(...page.data);
    cursor = page.next_cursor;
  } while (cursor);
  return all;
}

export const getEndpoint = (id: string, signal?: AbortSignal) => request<Endpoint>('GET', `/v1/endpoints/${enc(id)}`, { signal });

export const createEndpoint = (body: EndpointInput) => request<EndpointWithSecret>('POST', '/v1/endpoints', { body });

/** The answer carries `secret` only when the update changed the signature scheme. */
export const updateEndpoint = (id: string, body: Partial<EndpointInput>) =>
  request<Endpoint & { secret?: string }>('PATCH', `/v1/endpoints/${enc(id)}`, { body });

export const deleteEndpoint = (id: string) => request<void>('DELETE', `/v1/endpoints/${enc(id)}`);

/** With `overlapSeconds`, the old secret keeps signing next to the new one that long. */
export const rotateSecret = (id: string, overlapSeconds = 0) =>
  request<EndpointWithSecret>('POST', `/v1/endpoints/${enc(id)}/rotate-secret`, { body: { overlap_seconds: overlapSeconds } });

/** Ends a rotation's overlap now: the old secret is erased. */
export const endSecretOverlap = (id: string) => request<Endpoint>('DELETE', `/v1/endpoints/${enc(id)}/previous-secret`);

/** Sends one test request now; without a type Herald sends `webhook.test`. */
export const sendTest = (id: string, eventType?: string) =>
  request<AttemptDetail>('POST', `/v1/endpoints/${enc(id)}/test`, { body: eventType ? { event_type: eventType } : {} });

export const enableEndpoint = (id: string) => request<Endpoint>('POST', `/v1/endpoints/${enc(id)}/enable`);

export const recoverDeliveries = (id: string, since: string, dryRun: boolean) =>
  request<RecoverResult>('POST', `/v1/endpoints/${enc(id)}/recover`, { body: { since, dry_run: dryRun } });

/** The attempt log, newest first (Herald keeps the last 100). */
export const listAttempts = (id: string, options: { failuresOnly?: boolean; signal?: AbortSignal } = {}) =>
  request<Page<Attempt>>('GET', `/v1/endpoints/${enc(id)}/attempts?limit=100${options.failuresOnly ? '&outcome=retrying,failed' : ''}`, {
    signal: options.signal,
  });

export const getAttempt = (id: string, attemptId: string, signal?: AbortSignal) =>
  request<AttemptDetail>('GET', `/v1/endpoints/${enc(id)}/attempts/${enc(attemptId)}`, { signal });

export const disableEndpoint = (id: string, reason?: string) =>
  request<Endpoint>('POST', `/v1/endpoints/${enc(id)}/disable`, { body: reason ? { reason } : {} });

/** Delivery health over a window: success per delivery, latency percentiles, buckets for a chart. */
export const getEndpointStats = (id: string, window: StatsWindow, signal?: AbortSignal) =>
  request<EndpointStats>('GET', `/v1/endpoints/${enc(id)}/stats?window=${enc(window)}`, { signal });

/** Every API key of the account, revoked ones included, following the cursor. */
export async function listApiKeys(signal?: AbortSignal): Promise<ApiKey[]> {
  const all: ApiKey[] = [];
  let cursor: string | null = null;
  do {
    const query: string = `?limit=100${cursor ? `&cursor=${enc(cursor)}` : ''}`;
    const page: Page<ApiKey> = await request<Page<ApiKey>>('GET', `/v1/api-keys${query}`, { signal });
    all.push(...page.data);
    cursor = page.next_cursor;
  } while (cursor);
  return all;
}

export const createApiKey = (name: string) => request<ApiKeyWithKey>('POST', '/v1/api-keys', { body: name ? { name } : {} });

export const revokeApiKey = (id: string) => request<ApiKey>('DELETE', `/v1/api-keys/${enc(id)}`);

/** The whole event type catalog, following the cursor. */
export async function listAllEventTypes(signal?: AbortSignal): Promise<EventType[]> {
  const all: EventType[] = [];
  let cursor: string | null = null;
  do {
    const query: string = `?limit=100${cursor ? `&cursor=${enc(cursor)}` : ''}`;
    const page: Page<EventType> = await request<Page<EventType>>('GET', `/v1/event-types${query}`, { signal });
    all.push(...page.data);
    cursor = page.next_cursor;
  } while (cursor);
  return all;
}
