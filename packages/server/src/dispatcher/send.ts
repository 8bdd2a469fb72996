import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { EventEmitter } from 'node:events';
import { isIP, type LookupFunction } from 'node:net';
import { Agent, buildConnector, errors as undiciErrors } from 'undici';
import { refusedAddressMessage, type AddressPolicy } from '../core/address-policy.ts';
import type { AttemptResult, TransportErrorKind } from '../core/outcome.ts';

/** At most this much of a response body is kept for the attempt log. */
export const RESPONSE_EXCERPT_BYTES = 4096;
/** How long we read the body after the headers, for the excerpt only. */
const EXCERPT_READ_MS = 1000;

export interface SendRequest {
  url: string;
  headers: Record<string, string>;
  body: Buffer;
  timeoutMs: number;
  /** Aborts the attempt early (shutdown); the deadline uses it too. */
  abort?: Abort;
}

/**
 * Aborts one attempt. undici takes an EventEmitter as a request's signal;
 * an AbortController is an EventTarget, and creating one, listening to it and
 * letting go of it was about 5 % of a busy worker's time.
 */
export class Abort extends EventEmitter {
  aborted = false;
  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    this.emit('abort');
  }
}

/** No body can follow these answers (RFC 9110), or the receiver said it sends none. */
function hasNoBody(status: number, contentLength: unknown): boolean {
  return status === 204 || status === 304 || contentLength === '0';
}

export interface SendResult {
  result: AttemptResult;
  excerpt: Buffer | null;
  durationMs: number;
}

/** A connection refused by the address policy before it was opened. */
export class AddressRefusedError extends Error {
  readonly code = 'HERALD_ADDRESS_REFUSED';
  constructor(host: string, ip: string, kind: string) {
    super(refusedAddressMessage(host, ip, kind));
    this.name = 'AddressRefusedError';
  }
}

/**
 * DNS lookup that keeps only the addresses the policy allows, so the socket
 * can only connect to a checked address (no window for DNS rebinding between
 * a check and the connection).
 */
function checkedLookup(policy: AddressPolicy): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return (callback as (e: Error) => void)(err);
      const allowed = addresses.filter((a) => policy.check(a.address).allowed);
      if (allowed.length === 0) {
        const first = addresses[0];
        const refused = first
          ? new AddressRefusedError(hostname, first.address, policy.check(first.address).kind ?? 'special')
          : Object.assign(new Error(`DNS: no address for ${hostname}`), { code: 'ENOTFOUND' });
        return (callback as (e: Error) => void)(refused);
      }
      if (options.all) (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, allowed);
      else callback(null, allowed[0]!.address, allowed[0]!.family);
    });
  };
}

/**
 * One keep-alive pool per origin; redirects are never followed (no
 * interceptor). Every connection goes through the address policy: a literal
 * IP is checked here, a name after its DNS lookup.
 */
export function createAgent(options: { connections: number; addresses: AddressPolicy; connect?: buildConnector.BuildOptions }): Agent {
  const connectTls = buildConnector({ ...options.connect, lookup: checkedLookup(options.addresses) } as buildConnector.BuildOptions);
  const connect: buildConnector.connector = (opts, callback) => {
    const host = opts.hostname.startsWith('[') ? opts.hostname.slice(1, -1) : opts.hostname;
    if (isIP(host)) {
      const verdict = options.addresses.check(host);
      if (!verdict.allowed) {
        callback(new AddressRefusedError(host, host, verdict.kind ?? 'special'), null);
        return;
      }
    }
    connectTls(opts, callback);
  };
  const agent = new Agent({
    connections: options.connections,
    pipelining: 1,
    keepAliveTimeout: 30_000,
    connect,
  });
  pools.set(agent, { connections: options.connections, unanswered: new Map() });
  return agent;
}

/**
 * Per agent made by createAgent: its connections per origin, and the
 * requests sent through it not yet answered, per origin. Past the
 * connections, a request waits in undici's queue for one (see sendAttempt).
 */
const pools = new WeakMap<Agent, { connections: number; unanswered: Map<string, number> }>();

const TLS_MESSAGES: Record<string, string> = {
  CERT_HAS_EXPIRED: 'TLS: certificate has expired',
  CERT_NOT_YET_VALID: 'TLS: certificate is not yet valid',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'TLS: self-signed certificate is not trusted',
  SELF_SIGNED_CERT_IN_CHAIN: 'TLS: certificate chain ends in an untrusted self-signed certificate',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'TLS: certificate is not signed by a trusted authority',
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: 'TLS: certificate issuer is unknown (missing intermediate certificate?)',
  ERR_TLS_CERT_ALTNAME_INVALID: 'TLS: certificate does not match the host name',
};

/** Turns whatever undici or the socket threw into a kind and a sentence. */
export function describeTransportError(
  err: unknown,
  timeoutMs: number,
  how: { aborted: boolean; timedOut: boolean },
): { kind: TransportErrorKind; message: string } {
  const e = err as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException };
  const code = e?.code ?? e?.cause?.code ?? '';
  if (code === 'HERALD_ADDRESS_REFUSED') return { kind: 'address_refused', message: e.message };
  if (how.aborted) return { kind: 'aborted', message: 'aborted: Herald shut down before the receiver answered' };
  if (how.timedOut || e?.name === 'TimeoutError' || e?.name === 'AbortError' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT') {
    return { kind: 'timeout', message: `timed out after ${timeoutMs / 1000} s` };
  }
  if (code === 'ECONNREFUSED') return { kind: 'connection_refused', message: 'connection refused' };
  if (code === 'ECONNRESET' || code === 'EPIPE' || code === 'UND_ERR_SOCKET' || e instanceof undiciErrors.SocketError) {
    return { kind: 'connection_reset', message: 'connection closed by the receiver before it answered' };
  }
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_NONAME') {
    return { kind: 'dns', message: `DNS: host not found (${code})` };
  }
  if (TLS_MESSAGES[code]) return { kind: 'tls', message: TLS_MESSAGES[code]! };
  if (code.startsWith('ERR_TLS') || code.startsWith('ERR_SSL') || /certificate|SSL|TLS/i.test(e?.message ?? '')) {
    return { kind: 'tls', message: `TLS: ${e?.message ?? code}` };
  }
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return { kind: 'network', message: 'host unreachable' };
  return { kind: 'network', message: `network error: ${e?.message ?? String(err)}${code ? ` (${code})` : ''}` };
}

async function readExcerpt(body: AsyncIterable<Buffer> & { destroy(err?: Error): unknown }): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  const timer = setTimeout(() => body.destroy(), EXCERPT_READ_MS);
  try {
    for await (const chunk of body) {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= RESPONSE_EXCERPT_BYTES) {
        // Enough for the log; drop the rest and the connection with it.
        body.destroy();
        break;
      }
    }
  } catch {
    /* a body that breaks off still leaves what we read */
  } finally {
    clearTimeout(timer);
  }
  return size === 0 ? null : Buffer.concat(chunks).subarray(0, RESPONSE_EXCERPT_BYTES);
}

/**
 * Where a request goes, as undici's request() works it out from a URL string
 * (origin, and path with the query), kept per address: request(url) parses
 * the URL and copies its options on every call, a visible share of a busy
 * worker's allocations, for the few addresses it sends to.
 */
const targets = new Map<string, { origin: string; path: string }>();
const TARGETS_CACHED = 10_000;
function targetOf(url: string): { origin: string; path: string } {
  let target = targets.get(url);
  if (!target) {
    const u = new URL(url);
    target = { origin: u.origin, path: u.search ? `${u.pathname}${u.search}` : u.pathname };
    if (targets.size >= TARGETS_CACHED) targets.clear();
    targets.set(url, target);
  }
  return target;
}

/** Set on a request's options: called when undici hands the request to a connection. */
const onStart = Symbol('herald.onStart');
type StartOptions = Parameters<Agent['dispatch']>[0] & { [onStart]?: () => void };

type Callbacks = { [name: string]: ((...args: unknown[]) => unknown) | undefined };

/**
 * Passes undici's callbacks through to the request's own handler, and calls
 * `start` first when the request gets its connection (`onConnect`, just
 * before undici writes it).
 */
class StartHook {
  constructor(
    private readonly handler: Callbacks,
    private readonly start: () => void,
  ) {}
  onConnect(...args: unknown[]) {
    this.start();
    return this.handler.onConnect?.(...args);
  }
  onResponseStarted(...args: unknown[]) {
    return this.handler.onResponseStarted?.(...args);
  }
  onHeaders(...args: unknown[]) {
    return this.handler.onHeaders?.(...args);
  }
  onUpgrade(...args: unknown[]) {
    return this.handler.onUpgrade?.(...args);
  }
  onData(...args: unknown[]) {
    return this.handler.onData?.(...args);
  }
  onComplete(...args: unknown[]) {
    return this.handler.onComplete?.(...args);
  }
  onError(...args: unknown[]) {
    return this.handler.onError?.(...args);
  }
  onBodySent(...args: unknown[]) {
    return this.handler.onBodySent?.(...args);
  }
  onRequestSent(...args: unknown[]) {
    return this.handler.onRequestSent?.(...args);
  }
}

/**
 * The agent, with `dispatch` hooked for requests that carry `onStart`:
 * undici's `request()` builds its handler and calls `this.dispatch`, so an
 * object whose prototype is the agent sees every request first. Only a
 * queued request pays for the hook.
 */
const hooked = new WeakMap<Agent, Agent>();
function hookedAgent(agent: Agent): Agent {
  let h = hooked.get(agent);
  if (!h) {
    h = Object.create(agent) as Agent;
    h.dispatch = (opts: StartOptions, handler) => {
      const start = opts[onStart];
      return agent.dispatch(opts, start ? (new StartHook(handler as never, start) as unknown as typeof handler) : handler);
    };
    hooked.set(agent, h);
  }
  return h;
}

/**
 * Sends one attempt. The deadline covers connecting, sending and receiving
 * the status line and headers; the body is never interpreted.
 *
 * The deadline does not cover a wait for a connection that other requests to
 * the origin hold (endpoints that share an origin share its connections):
 * when the origin's requests not yet answered fill the agent's connections,
 * this request's deadline starts when undici hands it a connection, so a
 * wait behind slow requests cannot fail it unsent. A request queued like that
 * goes out on a connection already open, so there is nothing to connect; if
 * that connection closes meanwhile and undici opens a new one, the connect is
 * bounded by undici's own connect timeout.
 */
export async function sendAttempt(agent: Agent, req: SendRequest, now: () => number = performance.now.bind(performance)): Promise<SendResult> {
  let started = now();
  // One signal for both the deadline and a shutdown: cheaper than
  // AbortSignal.timeout() combined with AbortSignal.any() on every attempt.
  const abort = req.abort ?? new Abort();
  let timedOut = false;
  let deadline: NodeJS.Timeout | undefined;
  let queued = false;
  const startDeadline = () => {
    if (deadline) return;
    // A queued request's duration, like its deadline, counts from its connection.
    if (queued) started = now();
    deadline = setTimeout(() => {
      timedOut = true;
      abort.abort();
    }, req.timeoutMs);
  };
  const pool = pools.get(agent);
  let counted: string | undefined;
  try {
    const { origin, path } = targetOf(req.url);
    if (pool) {
      const ahead = pool.unanswered.get(origin) ?? 0;
      pool.unanswered.set(origin, ahead + 1);
      counted = origin;
      queued = ahead >= pool.connections;
    }
    if (!queued) startDeadline();
    const options: StartOptions = {
      origin,
      path,
      method: 'POST',
      headers: req.headers,
      body: req.body,
      signal: abort,
      headersTimeout: req.timeoutMs,
    } as StartOptions;
    if (queued) options[onStart] = startDeadline;
    const res = await (queued ? hookedAgent(agent) : agent).request(options as Parameters<Agent['request']>[0]);
    clearTimeout(deadline);
    const durationMs = Math.round(now() - started);
    const location = typeof res.headers.location === 'string' ? res.headers.location : undefined;
    const retryAfter = typeof res.headers['retry-after'] === 'string' ? res.headers['retry-after'] : undefined;
    // A bodiless answer (the usual 204) is complete already: nothing to read.
    const excerpt = hasNoBody(res.statusCode, res.headers['content-length'])
      ? null
      : await readExcerpt(res.body as unknown as AsyncIterable<Buffer> & { destroy(): unknown });
    return { result: { stage: 'response', status: res.statusCode, location, retryAfter }, excerpt, durationMs };
  } catch (err) {
    clearTimeout(deadline);
    const described = describeTransportError(err, req.timeoutMs, { aborted: abort.aborted && !timedOut, timedOut });
    return { result: { stage: 'transport', ...described }, excerpt: null, durationMs: Math.round(now() - started) };
  } finally {
    if (pool && counted !== undefined) {
      // Answered (or failed), its excerpt read: its connection is free.
      const left = (pool.unanswered.get(counted) ?? 1) - 1;
      if (left === 0) pool.unanswered.delete(counted);
      else pool.unanswered.set(counted, left);
    }
  }
}
