import { HEADER, verify, WebhookVerificationError } from '@herald/verify';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { request } from 'undici';

/**
 * `herald listen`'s receiver: an HTTPS server on 127.0.0.1 that takes each
 * delivery, checks its signature with @herald/verify, optionally forwards it
 * to the developer's app, answers Herald, and reports what happened.
 */

/** What one delivery was and what became of it; `--json` prints exactly this. */
export interface ReceivedDelivery {
  received_at: string;
  event_type: string | null;
  event_id: string | null;
  delivery_id: string | null;
  /** As sent, in the order sent, names in the sender's case. */
  headers: Record<string, string>;
  /** The parsed JSON body, or the raw text when it is not JSON. */
  body: unknown;
  signature: { verified: true } | { verified: false; code: string; reason: string };
  forward: null | { url: string; status: number; duration_ms: number } | { url: string; error: string; duration_ms: number };
  /** The status Herald got back. */
  answered: number;
}

export interface ListenReceiverOptions {
  cert: string;
  key: string;
  port: number;
  /** Resolves to the endpoint's signing secret once it is known (a retry can arrive before). */
  secret: () => Promise<string>;
  forwardTo?: string;
  onDelivery: (delivery: ReceivedDelivery) => void;
}

export interface ListenReceiver {
  port: number;
  close(): Promise<void>;
}

/** Herald waits 10 s for an answer; the app gets a little less, so Herald hears why it failed. */
const FORWARD_TIMEOUT_MS = 9_000;
/** Far above what Herald sends (its API takes 1 MiB bodies by default); only a guard against a runaway client. */
const MAX_BODY_BYTES = 32 * 1024 * 1024;
/** Not forwarded: they describe this connection, not the request (undici sets its own). */
const HOP_BY_HOP = new Set(['host', 'connection', 'keep-alive', 'transfer-encoding', 'content-length', 'upgrade', 'te', 'trailer', 'proxy-connection']);

/** Hints for the failures a developer is likely to meet here. */
const VERIFY_HINTS: Record<string, string> = {
  signature_mismatch: "signed with another secret: was the endpoint's secret rotated elsewhere? Start herald listen again to learn the new one",
  timestamp_too_old: 'a clock is wrong on one side, or this is a replay',
  timestamp_in_future: 'a clock is wrong on one side',
};

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new Error(`body larger than ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

function headerPairs(req: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i]!;
    headers[name] = name in headers ? `${headers[name]}, ${req.rawHeaders[i + 1]}` : req.rawHeaders[i + 1]!;
  }
  return headers;
}

function parsedBody(raw: Buffer): unknown {
  const text = raw.toString('utf8');
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

async function checkSignature(raw: Buffer, req: IncomingMessage, secret: string): Promise<ReceivedDelivery['signature']> {
  try {
    await verify({ body: raw, headers: req.headers, secret });
    return { verified: true };
  } catch (err) {
    if (!(err instanceof WebhookVerificationError)) throw err;
    const hint = VERIFY_HINTS[err.code];
    return { verified: false, code: err.code, reason: hint ? `${err.message} (${hint})` : err.message };
  }
}

async function forward(url: string, raw: Buffer, headers: Record<string, string>): Promise<NonNullable<ReceivedDelivery['forward']>> {
  const started = performance.now();
  const sent: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) if (!HOP_BY_HOP.has(name.toLowerCase())) sent[name] = value;
  try {
    const res = await request(url, { method: 'POST', headers: sent, body: raw, signal: AbortSignal.timeout(FORWARD_TIMEOUT_MS) });
    await res.body.dump();
    return { url, status: res.statusCode, duration_ms: Math.round(performance.now() - started) };
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    const error =
      e.name === 'TimeoutError' ? `no answer within ${FORWARD_TIMEOUT_MS / 1000} s` : e.code === 'ECONNREFUSED' ? 'connection refused: is your app running?' : (e.message ?? String(err));
    return { url, error, duration_ms: Math.round(performance.now() - started) };
  }
}

/**
 * What Herald is told: the app's status, except that a 5xx or no answer
 * becomes 502, so Herald retries it (and shows the attempt as failed).
 * Without --forward-to, 204.
 */
function answerFor(forwarded: ReceivedDelivery['forward']): number {
  if (forwarded === null) return 204;
  if (!('status' in forwarded) || forwarded.status >= 500) return 502;
  return forwarded.status;
}

async function handle(options: ListenReceiverOptions, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const receivedAt = new Date().toISOString();
  const raw = await readBody(req);
  const headers = headerPairs(req);
  const one = (name: string) => {
    const value = req.headers[name.toLowerCase()];
    return typeof value === 'string' ? value : null;
  };
  const signature = await checkSignature(raw, req, await options.secret());
  const forwarded = options.forwardTo ? await forward(options.forwardTo, raw, headers) : null;
  const answered = answerFor(forwarded);
  res.writeHead(answered, answered === 502 ? { 'content-type': 'text/plain; charset=utf-8' } : {});
  res.end(answered === 502 && forwarded ? `herald listen: forwarding to ${forwarded.url} gave ${'status' in forwarded ? forwarded.status : forwarded.error}\n` : undefined);
  options.onDelivery({
    received_at: receivedAt,
    event_type: one(HEADER.event),
    event_id: one(HEADER.eventId),
    delivery_id: one(HEADER.deliveryId),
    headers,
    body: parsedBody(raw),
    signature,
    forward: forwarded,
    answered,
  });
}

/** Starts the receiver on 127.0.0.1:`port` (0: any free port). */
export async function startListenReceiver(options: ListenReceiverOptions): Promise<ListenReceiver> {
  const server: Server = createServer({ cert: options.cert, key: options.key }, (req, res) => {
    handle(options, req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
      res.end(`herald listen: ${(err as Error).message}\n`);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
