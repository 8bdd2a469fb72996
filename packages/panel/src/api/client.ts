import type { Problem } from './types.ts';

/**
 * The panel's only way to the API: same origin, the session cookie, JSON in
 * and out. It adds the CSRF token to every request that changes something,
 * turns problem+json answers into an ApiError and reports an expired session
 * (401) so the app can return to the sign-in screen.
 */

export class ApiError extends Error {
  readonly status: number;
  readonly problem: Problem;
  /** Seconds to wait, from Retry-After on a 429. */
  readonly retryAfter: number | undefined;

  constructor(problem: Problem, retryAfter?: number) {
    super(problem.detail || problem.title);
    this.name = 'ApiError';
    this.status = problem.status;
    this.problem = problem;
    this.retryAfter = retryAfter;
  }

  get code(): string {
    return this.problem.code;
  }

  /** The message for one field (`url`, `event_types`…), matching `event_types[2]` to `event_types`. */
  fieldError(field: string): string | undefined {
    const hit = this.problem.errors?.find((e) => e.field === field || e.field.startsWith(`${field}[`) || e.field.startsWith(`${field}.`));
    return hit?.message;
  }
}

/** Status 0: the request never got an answer. */
export const NETWORK_ERROR = 'network_error';

let csrfToken: string | undefined;
let portalToken: string | undefined;
let sessionExpired: (() => void) | undefined;

/** Set after sign-in (and cleared on sign-out); sent as X-CSRF-Token on every non-GET request. */
export function setCsrfToken(token: string | undefined): void {
  csrfToken = token;
}

/**
 * An embedded panel's session token (lib/portal.ts): sent as a bearer token
 * instead of the cookie, which is then left out.
 */
export function setPortalToken(token: string | undefined): void {
  portalToken = token;
}

/** Called when a request answers 401: the session ended (signed out elsewhere, expired). */
export function onSessionExpired(handler: () => void): void {
  sessionExpired = handler;
}

export interface RequestOptions {
  body?: unknown;
  signal?: AbortSignal;
  /** A 401 is an answer here (GET /v1/session), not an expired session. */
  expect401?: boolean;
  /** More headers, e.g. Idempotency-Key. */
  headers?: Record<string, string>;
}

export async function request<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json, application/problem+json', ...options.headers };
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && method !== 'HEAD' && csrfToken) headers['x-csrf-token'] = csrfToken;
  if (portalToken) headers.authorization = `Bearer ${portalToken}`;

  let response: Response;
  try {
    response = await fetch(path, {
      method,
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      credentials: portalToken ? 'omit' : 'same-origin',
      signal: options.signal,
    });
  } catch (err) {
    if ((err as Error).name === 'AbortError') throw err;
    throw new ApiError({
      type: 'about:blank',
      title: 'Herald did not answer',
      status: 0,
      code: NETWORK_ERROR,
      detail: 'Herald did not answer. Check that it is running and that you are online, then try again.',
    });
  }

  if (response.ok) {
    if (response.status === 204) return undefined as T;
    return (await response.json()) as T;
  }

  const error = await toApiError(response);
  if (response.status === 401 && !options.expect401) sessionExpired?.();
  throw error;
}

async function toApiError(response: Response): Promise<ApiError> {
  const retryAfter = parseRetryAfter(response.headers.get('retry-after'));
  let problem: Problem | undefined;
  if (/json/.test(response.headers.get('content-type') ?? '')) {
    problem = (await response.json().catch(() => undefined)) as Problem | undefined;
  }
  problem ??= {
    type: 'about:blank',
    title: response.statusText || 'Request failed',
    status: response.status,
    code: `http_${response.status}`,
    detail: `Herald answered ${response.status}${response.statusText ? ` ${response.statusText}` : ''}. Try again; if it persists, ask your operator to check Herald's log.`,
  };
  if (response.status === 429) {
    const wait = retryAfter === undefined ? 'a moment' : retryAfter <= 1 ? 'a second' : `${retryAfter} seconds`;
    problem = { ...problem, detail: `Too many requests. Wait ${wait}, then try again.` };
  }
  return new ApiError(problem, retryAfter);
}

function parseRetryAfter(value: string | null): number | undefined {
  if (!value) return undefined;
  if (/^\d+$/.test(value)) return Number(value);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}
