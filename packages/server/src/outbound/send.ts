import { errors, type Dispatcher } from 'undici';
import type { AttemptResult } from '../core/outcome.ts';
import { describeTransportError } from './transport-errors.ts';

/** At most this much of a response body is kept for the attempt log. */
export const RESPONSE_EXCERPT_BYTES = 4096;
/** How long the body is read after the headers, for the excerpt only. */
const EXCERPT_READ_MS = 1000;

export interface SendRequest {
  url: string;
  headers: Record<string, string>;
  body: Buffer;
  /** The deadline for an answer's status line and headers, from the moment the request is sent. */
  timeoutMs: number;
  /**
   * Where an attempt in flight leaves a way to cut it short, for a shutdown to
   * call: it ends as `aborted` unless it has an answer already. A set, not an
   * AbortSignal: an attempt costs no listener, nor a controller of its own.
   */
  cancels?: Pick<Set<() => void>, 'add' | 'delete'>;
}

export interface SendResult {
  result: AttemptResult;
  excerpt: Buffer | null;
  /** From sending the request to its answer's headers (or its failure). */
  durationMs: number;
}

/** How one attempt is sent: `sendAttempt` bound to an agent, or a test's stand-in. */
export type Send = (req: SendRequest) => Promise<SendResult>;

/** A header as the receiver sent it once; a repeated one counts as absent. */
function single(value: string | string[] | undefined): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/**
 * One attempt, as undici's dispatch handler: its events arrive here
 * directly, without a response stream, an AbortSignal or a second promise.
 * Until the headers, `timer` is the deadline; after them, it bounds the
 * reading of the body, which only feeds the excerpt and is never interpreted.
 */
class Attempt implements Dispatcher.DispatchHandler {
  private readonly started = performance.now();
  private controller: Dispatcher.DispatchController | undefined;
  // Why Herald cut the attempt short itself, if it did.
  private cut: 'deadline' | 'shutdown' | undefined;
  private answer: { result: AttemptResult; durationMs: number } | undefined;
  private readonly chunks: Buffer[] = [];
  private size = 0;
  // undici is done with the request (its body ended, or it failed).
  private over = false;
  private resolved = false;
  private timer: NodeJS.Timeout;
  readonly cancel = () => this.cutShort('shutdown');

  constructor(private readonly req: SendRequest, private readonly resolve: (r: SendResult) => void) {
    this.timer = setTimeout(() => this.cutShort('deadline'), req.timeoutMs);
  }

  private cutShort(why: 'deadline' | 'shutdown'): void {
    if (this.answer) return this.answered();
    this.cut ??= why;
    // Before undici has a connection for it, onRequestStart cuts it instead.
    this.controller?.abort(new errors.RequestAbortedError());
  }

  private finish(r: SendResult): void {
    if (this.resolved) return;
    this.resolved = true;
    clearTimeout(this.timer);
    this.req.cancels?.delete(this.cancel);
    this.resolve(r);
  }

  /**
   * Ends the attempt with its answer and what came of its body. A body still
   * coming is cut off, closing its connection, once the data at hand is
   * parsed (a microtask later): a body that ends within it keeps the
   * connection for the next request.
   */
  private answered(): void {
    if (this.resolved) return;
    const excerpt = this.size === 0 ? null : Buffer.concat(this.chunks).subarray(0, RESPONSE_EXCERPT_BYTES);
    this.finish({ ...this.answer!, excerpt });
    queueMicrotask(() => this.over || this.controller?.abort(new errors.RequestAbortedError()));
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.cut) controller.abort(new errors.RequestAbortedError());
  }

  onResponseStart(_c: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    if (statusCode < 200) return; // informational: the answer follows
    // Answered: the deadline is met; the body is read for the excerpt only.
    clearTimeout(this.timer);
    const result: AttemptResult = { stage: 'response', status: statusCode, location: single(headers.location), retryAfter: single(headers['retry-after']) };
    this.answer = { result, durationMs: Math.round(performance.now() - this.started) };
    this.timer = setTimeout(() => this.answered(), EXCERPT_READ_MS);
  }

  onResponseData(_c: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.resolved) return;
    this.chunks.push(chunk);
    this.size += chunk.length;
    if (this.size >= RESPONSE_EXCERPT_BYTES) this.answered();
  }

  onResponseEnd(): void {
    this.over = true;
    if (this.answer) this.answered();
  }

  onResponseError(_c: Dispatcher.DispatchController | undefined, err: Error): void {
    this.over = true;
    this.fail(err);
  }

  /** A body that breaks off keeps what came of it; a failure before the headers is described. */
  fail(err: unknown): void {
    if (this.answer) return this.answered();
    const described = describeTransportError(err, this.req.timeoutMs, { aborted: this.cut === 'shutdown', timedOut: this.cut === 'deadline' });
    this.finish({ result: { stage: 'transport', ...described }, excerpt: null, durationMs: Math.round(performance.now() - this.started) });
  }
}

/**
 * Sends one attempt through `agent` and waits for its end, however it ends
 * (it never throws). The deadline starts now, when the request is handed to
 * undici (whose agent has a connection free for it: see createAgent), and
 * covers connecting, sending and receiving the status line and headers.
 * Redirects are not followed; Location and Retry-After are kept for the
 * outcome.
 */
export function sendAttempt(agent: Dispatcher, req: SendRequest): Promise<SendResult> {
  return new Promise((resolve) => {
    const attempt = new Attempt(req, resolve);
    req.cancels?.add(attempt.cancel);
    try {
      const url = new URL(req.url);
      agent.dispatch({ origin: url.origin, path: url.pathname + url.search, method: 'POST', headers: req.headers, body: req.body }, attempt);
    } catch (err) {
      attempt.fail(err);
    }
  });
}
