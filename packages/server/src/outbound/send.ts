import { request, type Dispatcher } from 'undici';
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
  /** Aborted at shutdown: the attempt ends as `aborted` unless it has an answer already. */
  signal?: AbortSignal;
}

export interface SendResult {
  result: AttemptResult;
  excerpt: Buffer | null;
  /** From sending the request to its answer's headers (or its failure). */
  durationMs: number;
}

/** How one attempt is sent: `sendAttempt` bound to an agent, or a test's stand-in. */
export type Send = (req: SendRequest) => Promise<SendResult>;

type ResponseBody = Dispatcher.ResponseData['body'];

/** A header as the receiver sent it once; a repeated one counts as absent. */
function single(value: string | string[] | undefined): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/**
 * Reads at most RESPONSE_EXCERPT_BYTES of a body, for at most
 * EXCERPT_READ_MS; the body is never interpreted. What is not read is
 * dropped: stopping early destroys the body, which undici ignores for a
 * request already complete (the connection is kept) and otherwise ends by
 * closing the connection. A body that breaks off keeps what came of it.
 */
async function readExcerpt(body: ResponseBody): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  let whole = false;
  const timer = setTimeout(() => body.destroy(), EXCERPT_READ_MS);
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= RESPONSE_EXCERPT_BYTES) break;
    }
    whole = size < RESPONSE_EXCERPT_BYTES;
  } catch {
    // Cut off by the time limit or by the receiver: what came is the excerpt.
  } finally {
    clearTimeout(timer);
    // A body read to its end keeps its connection for the next request.
    if (!whole) body.destroy();
  }
  return size === 0 ? null : Buffer.concat(chunks).subarray(0, RESPONSE_EXCERPT_BYTES);
}

/**
 * Sends one attempt through `agent` and waits for its end, however it ends
 * (it never throws). The deadline starts now, when the request is handed to
 * undici (whose agent has a connection free for it: see createAgent), and
 * covers connecting, sending and receiving the status line and headers.
 * Redirects are not followed; Location and Retry-After are kept for the
 * outcome.
 */
export async function sendAttempt(agent: Dispatcher, req: SendRequest): Promise<SendResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  // Why Herald cut the attempt short itself, if it did.
  let cut: 'deadline' | 'shutdown' | undefined;
  const abort = new AbortController();
  const onShutdown = () => {
    cut ??= 'shutdown';
    abort.abort();
  };
  const deadline = setTimeout(() => {
    cut ??= 'deadline';
    abort.abort();
  }, req.timeoutMs);
  if (req.signal?.aborted) onShutdown();
  else req.signal?.addEventListener('abort', onShutdown, { once: true });
  try {
    const res = await request(req.url, { dispatcher: agent, method: 'POST', headers: req.headers, body: req.body, signal: abort.signal });
    // Answered: the deadline is met; the body only feeds the log's excerpt.
    clearTimeout(deadline);
    const durationMs = elapsed();
    const location = single(res.headers.location);
    const retryAfter = single(res.headers['retry-after']);
    const excerpt = await readExcerpt(res.body);
    return { result: { stage: 'response', status: res.statusCode, location, retryAfter }, excerpt, durationMs };
  } catch (err) {
    const described = describeTransportError(err, req.timeoutMs, { aborted: cut === 'shutdown', timedOut: cut === 'deadline' });
    return { result: { stage: 'transport', ...described }, excerpt: null, durationMs: elapsed() };
  } finally {
    clearTimeout(deadline);
    req.signal?.removeEventListener('abort', onShutdown);
  }
}
