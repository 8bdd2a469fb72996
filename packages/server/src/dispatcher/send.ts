import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { Agent, buildConnector, errors as undiciErrors } from 'undici';
import { refusedAddressMessage, type AddressPolicy, type AddressVerdict } from '../core/address-policy.ts';
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
  constructor(host: string, ip: string, verdict: AddressVerdict) {
    super(refusedAddressMessage(host, ip, verdict));
    this.name = 'AddressRefusedError';
  }
}

/**
 * Resolves a host name to every address it has, as `dns.lookup(name, {
 * all: true })` does (the default). Tests pass one that maps names to
 * whatever addresses they need.
 */
export type ResolveHost = (hostname: string, options: Pick<LookupOptions, 'family' | 'hints'>, callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void) => void;

const resolveWithDns: ResolveHost = (hostname, options, callback) => dnsLookup(hostname, { ...options, all: true }, callback);

/**
 * A socket's lookup that keeps only the addresses the policy allows, so the
 * socket can only connect to a checked address (no window for DNS rebinding
 * between a check and the connection). Every address is checked, whichever
 * the socket would try first; a name with none left fails with the first
 * refused one's reason.
 */
export function checkedLookup(policy: AddressPolicy, resolve: ResolveHost = resolveWithDns): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, { family: options.family, hints: options.hints }, (err, addresses) => {
      if (err) return (callback as (e: Error) => void)(err);
      const allowed = addresses.filter((a) => policy.check(a.address).allowed);
      if (allowed.length === 0) {
        const first = addresses[0];
        const refused = first
          ? new AddressRefusedError(hostname, first.address, policy.check(first.address))
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
 * IP is checked here, a name after its DNS lookup (`lookup`, node's
 * `dns.lookup` unless given). Nothing is connected to for a refused address.
 *
 * `timeoutMs` is the attempts' deadline, and also bounds a connection's
 * set-up (DNS, TCP and TLS): a Flight can abort its request only once undici
 * has a connection for it (`onConnect`), so a handshake that hangs ends at
 * the connect timeout, which is undici's 10 s unless given here.
 */
export function createAgent(options: {
  connections: number;
  addresses: AddressPolicy;
  timeoutMs: number;
  connect?: buildConnector.BuildOptions;
  lookup?: ResolveHost;
}): Agent {
  const connectTls = buildConnector({ timeout: options.timeoutMs, ...options.connect, lookup: checkedLookup(options.addresses, options.lookup) } as buildConnector.BuildOptions);
  const connect: buildConnector.connector = (opts, callback) => {
    const host = opts.hostname.startsWith('[') ? opts.hostname.slice(1, -1) : opts.hostname;
    if (isIP(host)) {
      const verdict = options.addresses.check(host);
      if (!verdict.allowed) {
        callback(new AddressRefusedError(host, host, verdict), null);
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
 * connections, a request waits in undici's queue for one (see Flight).
 */
type Pool = { connections: number; unanswered: Map<string, number> };
const pools = new WeakMap<Agent, Pool>();

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

/** Why Herald cut an attempt short itself. */
const Cut = { None: 0, Deadline: 1, Shutdown: 2 } as const;
type Cut = (typeof Cut)[keyof typeof Cut];

const clock = performance.now.bind(performance);

/** A header value as HTTP/1.1 carries it: bytes read as Latin-1, as Node's http and undici's request() read them. */
function headerText(value: Buffer | string): string {
  return typeof value === 'string' ? value : value.toString('latin1');
}

function onDeadline(flight: Flight): void {
  flight.cut(Cut.Deadline);
}

function onExcerptTimeout(flight: Flight): void {
  // Enough waiting for the log's excerpt: keep what came, drop the connection.
  flight.land();
  flight.drop();
}

/**
 * One attempt in flight, as undici's handler for its request: everything the
 * attempt needs until it ends is in this one object, and a subclass says what
 * happens then (`landed`).
 *
 * Not undici's `request()`: it makes a promise, a handler that is an async
 * resource and a response stream for every request, on top of the caller's
 * own promises. In a worker at full speed most requests wait in undici's
 * queue for a connection, so whatever an attempt allocates when it is sent
 * outlives a young-generation collection or two and is copied and promoted:
 * that copying was about a fifth of the worker's CPU in the benchmark
 * (decision 0010). `dispatch()` with a handler of our own is what
 * `request()` is built on, through the same Agent and its pools.
 *
 * The deadline covers connecting, sending and receiving the status line and
 * headers; the body is never interpreted, and at most RESPONSE_EXCERPT_BYTES
 * of it are read, for at most EXCERPT_READ_MS.
 *
 * The deadline does not cover a wait for a connection that other requests to
 * the origin hold (endpoints that share an origin share its connections):
 * when the origin's requests not yet answered fill the agent's connections,
 * this request's deadline starts when undici hands it a connection
 * (`onConnect`), so a wait behind slow requests cannot fail it unsent. A
 * request queued like that goes out on a connection already open, so there
 * is nothing to connect; if that connection closes meanwhile and undici
 * opens a new one, the connect is bounded by the agent's connect timeout,
 * the deadline again (createAgent).
 */
export abstract class Flight {
  private timeoutMs = 0;
  private now: () => number = clock;
  private started = 0;
  private timer: NodeJS.Timeout | undefined;
  private abortRequest: ((err?: Error) => void) | null = null;
  private why: Cut = Cut.None;
  /** Waiting in undici's queue: the deadline starts at `onConnect`. */
  private queued = false;
  private pool: Pool | undefined;
  private origin = '';
  private status = 0;
  private location: string | undefined;
  private retryAfter: string | undefined;
  private durationMs = 0;
  private chunks: Buffer[] | null = null;
  private size = 0;
  private ended = false;

  /** Called once, when the attempt has ended, however it ended. */
  protected abstract landed(sent: SendResult): void;

  /** Sends it (once). */
  send(agent: Agent, req: SendRequest, now?: () => number): void {
    this.timeoutMs = req.timeoutMs;
    if (now) this.now = now;
    this.started = this.now();
    let target;
    try {
      target = targetOf(req.url);
    } catch (err) {
      this.onError(err as Error);
      return;
    }
    this.pool = pools.get(agent);
    if (this.pool) {
      const ahead = this.pool.unanswered.get(target.origin) ?? 0;
      this.pool.unanswered.set(target.origin, ahead + 1);
      this.origin = target.origin;
      this.queued = ahead >= this.pool.connections;
    }
    if (!this.queued) this.startDeadline();
    // undici's own header and body timers stay off: the deadline and the
    // excerpt's time limit here are the only ones (they cost a timer object
    // per request and per stage, and each lived on in undici's timer wheel).
    agent.dispatch({ origin: target.origin, path: target.path, method: 'POST', headers: req.headers, body: req.body, headersTimeout: 0, bodyTimeout: 0 }, this);
  }

  /** Aborts it (shutdown): it ends as aborted unless it has an answer already. */
  abort(): void {
    this.cut(Cut.Shutdown);
  }

  /** @internal */
  cut(why: Cut): void {
    if (this.ended || this.why !== Cut.None) return;
    this.why = why;
    // Not connected yet: undici calls onConnect once it is, and it ends there.
    this.abortRequest?.();
  }

  private startDeadline(): void {
    this.timer = setTimeout(onDeadline, this.timeoutMs, this);
  }

  /** @internal Ends it with the answer as far as it came. */
  land(): void {
    if (this.ended) return;
    const excerpt = this.size === 0 ? null : Buffer.concat(this.chunks!).subarray(0, RESPONSE_EXCERPT_BYTES);
    this.end({ result: { stage: 'response', status: this.status, location: this.location, retryAfter: this.retryAfter }, excerpt, durationMs: this.durationMs });
  }

  /** @internal Drops the connection (the rest of a body we do not read). */
  drop(): void {
    this.abortRequest?.();
  }

  private end(sent: SendResult): void {
    this.ended = true;
    clearTimeout(this.timer);
    this.chunks = null;
    if (this.pool) {
      // Answered (or failed), its excerpt read: its connection is free.
      const left = (this.pool.unanswered.get(this.origin) ?? 1) - 1;
      if (left === 0) this.pool.unanswered.delete(this.origin);
      else this.pool.unanswered.set(this.origin, left);
      this.pool = undefined;
    }
    this.landed(sent);
  }

  // undici's handler (dispatch): called in this order, onError instead at any point.

  onConnect(abort: (err?: Error) => void): void {
    this.abortRequest = abort;
    if (this.why !== Cut.None) {
      abort();
      return;
    }
    if (this.queued) {
      // Its duration, like its deadline, counts from its connection.
      this.started = this.now();
      this.startDeadline();
    }
  }

  onHeaders(statusCode: number, rawHeaders: Array<Buffer | string>): boolean {
    if (statusCode < 200 || this.ended) return true;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.durationMs = Math.round(this.now() - this.started);
    this.status = statusCode;
    let contentLength: string | undefined;
    // Only three headers matter; a repeated one counts as absent.
    for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
      const name = rawHeaders[i]!;
      const n = name.length;
      if (n !== 8 && n !== 11 && n !== 14) continue;
      const lower = name.toString().toLowerCase();
      if (lower === 'location') this.location = this.location === undefined ? headerText(rawHeaders[i + 1]!) : '';
      else if (lower === 'retry-after') this.retryAfter = this.retryAfter === undefined ? headerText(rawHeaders[i + 1]!) : '';
      else if (lower === 'content-length') contentLength = headerText(rawHeaders[i + 1]!);
    }
    if (this.location === '') this.location = undefined;
    if (this.retryAfter === '') this.retryAfter = undefined;
    // A bodiless answer (the usual 204) is complete already: nothing to read.
    if (hasNoBody(statusCode, contentLength)) {
      this.land();
      return true;
    }
    this.chunks = [];
    this.timer = setTimeout(onExcerptTimeout, EXCERPT_READ_MS, this);
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.ended) return true;
    this.chunks!.push(chunk);
    this.size += chunk.length;
    if (this.size >= RESPONSE_EXCERPT_BYTES) {
      // Enough for the log; the rest is not waited for. Its connection is
      // dropped unless the rest of the body came in the same read: undici
      // hands over the body (onData) before it marks the request complete
      // (onComplete), and aborting a request not yet complete destroys the
      // socket, so dropping here at once cost the origin a connection for
      // every answer of 4 KiB or more (a proxy's error page, a verbose
      // acknowledgement). The microtask runs once undici has parsed all that
      // this read brought, and undici ignores an abort of a complete request.
      this.land();
      queueMicrotask(() => this.drop());
    }
    return true;
  }

  onComplete(): void {
    this.land();
  }

  onError(err: Error): void {
    if (this.ended) return;
    // A body that breaks off still leaves the answer and what we read of it.
    if (this.status !== 0) return this.land();
    const described = describeTransportError(err, this.timeoutMs, { aborted: this.why === Cut.Shutdown, timedOut: this.why === Cut.Deadline });
    this.end({ result: { stage: 'transport', ...described }, excerpt: null, durationMs: Math.round(this.now() - this.started) });
  }

}

class PromisedFlight extends Flight {
  constructor(private readonly resolve: (sent: SendResult) => void) {
    super();
  }
  protected landed(sent: SendResult): void {
    this.resolve(sent);
  }
}

/** Sends one attempt (test sends; the dispatcher uses its own Flight). */
export function sendAttempt(agent: Agent, req: SendRequest, now?: () => number): Promise<SendResult> {
  return new Promise((resolve) => new PromisedFlight(resolve).send(agent, req, now));
}
