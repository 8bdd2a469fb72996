import { request } from 'undici';
import { ConfigError, type FieldError } from '../errors.ts';

/**
 * A client of Herald's public management API, for the CLI's `endpoints`,
 * `attempts` and `events` commands. It speaks HTTP only, as any other client
 * would: these commands work against a Herald on another machine, and never
 * open the database.
 */

/** An RFC 9457 problem as the API sends it. `code` is the stable part. */
export interface ApiProblem {
  status: number;
  code: string;
  detail: string;
  errors?: FieldError[];
}

/** The API answered, with an error. */
export class ApiProblemError extends Error {
  constructor(
    readonly problem: ApiProblem,
    /** The problem document exactly as it came, for `--json`; undefined when the answer was not JSON. */
    readonly body?: unknown,
  ) {
    super(problem.detail);
    this.name = 'ApiProblemError';
  }
}

/** The API did not answer at all: not running, wrong address, network down. */
export class ApiUnreachableError extends Error {
  constructor(
    readonly baseUrl: string,
    readonly reason: string,
    options: { cause?: unknown } = {},
  ) {
    super(`cannot reach Herald at ${baseUrl}: ${reason}`, options);
    this.name = 'ApiUnreachableError';
  }
}

export interface ApiResponse<T> {
  status: number;
  /** Undefined for a 204. */
  body: T;
  /** The server replayed the stored answer to an earlier request with the same Idempotency-Key. */
  replayed: boolean;
}

/** The shape of every list the API returns. */
export interface Page<T> {
  data: T[];
  next_cursor: string | null;
}

export interface ApiRequest {
  query?: Record<string, string | number | undefined>;
  /** Sent as JSON; leave it out for a request without a body. */
  body?: unknown;
  /** Sent on mutating requests, so a retried command does not act twice. */
  idempotencyKey?: string;
}

export interface ApiClient {
  readonly baseUrl: string;
  call<T>(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, req?: ApiRequest): Promise<ApiResponse<T>>;
  /**
   * Follows `next_cursor` until the list ends or `max` items are in hand.
   * Pages are sized so the last one ends exactly at `max`, so the returned
   * `next_cursor` continues right after the last item returned.
   */
  list<T>(path: string, query?: Record<string, string | undefined>, max?: number): Promise<Page<T>>;
}

/** The API's largest page. */
const MAX_PAGE = 100;

/** `--herald-url`: an http(s) address without a trailing slash. */
export function parseBaseUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError('--herald-url / HERALD_URL', `"${raw}" is not a URL; give the address Herald's API listens on, e.g. http://127.0.0.1:8080`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigError('--herald-url / HERALD_URL', `must be an http:// or https:// address, got ${url.protocol}//`);
  }
  return url.toString().replace(/\/+$/, '');
}

/** `--api-key`: present, and sendable in a header. Neither message contains the key. */
export function checkApiKey(raw: string | undefined, baseUrl: string): string {
  if (!raw) {
    throw new ConfigError(
      '--api-key / HERALD_API_KEY',
      `is required for the endpoints, attempts and events commands, which call the API at ${baseUrl}; ` +
        'create a key with: herald keys create --account <id>, then export HERALD_API_KEY=hk_…',
    );
  }
  if (!/^[\x21-\x7e]+$/.test(raw)) {
    throw new ConfigError('--api-key / HERALD_API_KEY', 'must be the key as printed, hk_…, without spaces or other characters around it');
  }
  return raw;
}

/**
 * @example
 *   const api = createApiClient({ baseUrl: 'http://127.0.0.1:8080', apiKey });
 *   const { body } = await api.call<{ url: string }>('GET', `/v1/endpoints/${id}`);
 */
export function createApiClient({ baseUrl, apiKey }: { baseUrl: string; apiKey: string }): ApiClient {
  // Belt and braces: whatever a lower layer puts in a message, the key is not printed.
  const redact = (text: string) => (apiKey ? text.split(apiKey).join('[api key]') : text);

  async function call<T>(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, req: ApiRequest = {}): Promise<ApiResponse<T>> {
    const query = new URLSearchParams();
    for (const [k, v] of Object.entries(req.query ?? {})) if (v !== undefined) query.set(k, String(v));
    const url = `${baseUrl}${path}${query.size ? `?${query}` : ''}`;
    const headers: Record<string, string> = { accept: 'application/json', authorization: `Bearer ${apiKey}` };
    if (req.body !== undefined) headers['content-type'] = 'application/json';
    if (req.idempotencyKey !== undefined) headers['idempotency-key'] = req.idempotencyKey;

    let res: Awaited<ReturnType<typeof request>>;
    try {
      res = await request(url, { method, headers, body: req.body === undefined ? undefined : JSON.stringify(req.body) });
    } catch (cause) {
      throw new ApiUnreachableError(baseUrl, redact(describeTransportError(cause)), { cause });
    }
    const text = await res.body.text();
    const contentType = String(res.headers['content-type'] ?? '');
    const json = /^application\/(problem\+)?json/.test(contentType) && text !== '' ? parseJson(text) : undefined;
    if (res.statusCode >= 400) {
      const problem = json as Partial<ApiProblem> | undefined;
      throw new ApiProblemError({
        status: res.statusCode,
        code: typeof problem?.code === 'string' ? problem.code : `http_${res.statusCode}`,
        // Not a Herald problem (a proxy's error page, say): say what came back, not what it said.
        detail: typeof problem?.detail === 'string' ? redact(problem.detail) : `HTTP ${res.statusCode} from ${url} (${contentType || 'no content type'}); is ${baseUrl} Herald's API?`,
        ...(Array.isArray(problem?.errors) ? { errors: problem.errors } : {}),
      }, json);
    }
    if (json === undefined && res.statusCode !== 204) {
      throw new ApiUnreachableError(baseUrl, `HTTP ${res.statusCode} without a JSON body from ${url}; is this Herald's API?`);
    }
    return { status: res.statusCode, body: json as T, replayed: res.headers['idempotent-replayed'] === 'true' };
  }

  async function list<T>(path: string, query: Record<string, string | undefined> = {}, max = Infinity): Promise<Page<T>> {
    const data: T[] = [];
    let cursor: string | undefined;
    for (;;) {
      const limit = Math.min(MAX_PAGE, max - data.length);
      const { body } = await call<Page<T>>('GET', path, { query: { ...query, limit, cursor } });
      data.push(...body.data);
      if (body.next_cursor === null || data.length >= max) return { data, next_cursor: body.next_cursor };
      cursor = body.next_cursor;
    }
  }

  return { baseUrl, call, list };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function describeTransportError(err: unknown): string {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  switch (code) {
    case 'ECONNREFUSED':
      return 'connection refused; is Herald running? Start it with: herald start (or point --herald-url / HERALD_URL at where it listens)';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'the host name does not resolve; check --herald-url / HERALD_URL';
    case 'ECONNRESET':
    case 'UND_ERR_SOCKET':
      return 'the connection was closed before an answer; is this Herald\u2019s API?';
    default:
      return (err as Error)?.message ?? String(err);
  }
}
