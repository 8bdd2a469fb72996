import { createServer, type Server } from 'node:https';
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { TLS } from './tls.ts';

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** What the receiver does with a request: answer, never answer, drop the connection, or break off an answer. */
export type Behaviour =
  | { status: number; headers?: Record<string, string | string[]>; body?: string | Buffer; delayMs?: number; earlyHints?: boolean }
  | { hang: true }
  | { destroy: true }
  /**
   * Sends the status line, headers and the start of a body, then stalls
   * there, drops the connection, trickles on (a byte every 50 ms, never
   * ending) or ends the body 100 ms later.
   */
  | { status: number; partial: string; then: 'stall' | 'destroy' | 'trickle' | 'end' };

export interface Receiver {
  url: string;
  port: number;
  requests: ReceivedRequest[];
  /** TCP connections accepted so far (a kept-alive connection counts once). */
  readonly connections: number;
  /** Resolves once `n` requests have arrived in total. */
  received(n: number): Promise<void>;
  /** Resolves once `check` holds for the requests received so far. */
  until(check: (requests: ReceivedRequest[]) => boolean): Promise<void>;
  /** Replaces the behaviour; requests already answered keep theirs. */
  respond(behaviour: Behaviour | ((req: ReceivedRequest, index: number) => Behaviour)): void;
  close(): Promise<void>;
}

/**
 * A real HTTPS server on loopback with the test CA's certificate (or an
 * expired / untrusted one). It records each request's raw bytes.
 */
export async function startReceiver(options: { cert?: string; path?: string } = {}): Promise<Receiver> {
  let behave: (req: ReceivedRequest, index: number) => Behaviour = () => ({ status: 204 });
  const requests: ReceivedRequest[] = [];
  const sockets = new Set<Socket>();
  let connections = 0;
  const hanging = new Set<ServerResponse>();
  const waiters: Array<{ check: (r: ReceivedRequest[]) => boolean; resolve: () => void }> = [];
  const server: Server = createServer({ key: TLS.key, cert: options.cert ?? TLS.cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const received: ReceivedRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) };
      requests.push(received);
      for (const w of waiters.filter((w) => w.check(requests))) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
      const b = behave(received, requests.length - 1);
      if ('hang' in b) {
        hanging.add(res);
        return;
      }
      if ('destroy' in b) {
        req.socket.destroy();
        return;
      }
      if ('partial' in b) {
        // Chunked, so the client knows more was to come.
        res.writeHead(b.status, { 'content-type': 'text/plain' });
        res.write(b.partial);
        if (b.then === 'destroy') setTimeout(() => req.socket.destroy(), 50);
        else if (b.then === 'end') setTimeout(() => res.end(), 100);
        else if (b.then === 'trickle') {
          const trickle = setInterval(() => res.write('.'), 50);
          res.on('close', () => clearInterval(trickle));
        } else hanging.add(res);
        return;
      }
      // An informational 103 first, as a CDN may send before the real answer.
      if (b.earlyHints) res.writeEarlyHints({ link: '</style.css>; rel=preload; as=style' });
      const answer = () => {
        res.writeHead(b.status, b.headers);
        res.end(b.body);
      };
      if (b.delayMs) setTimeout(answer, b.delayMs);
      else answer();
    });
  });
  server.on('connection', (s: Socket) => {
    connections += 1;
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.on('secureConnection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  function until(check: (r: ReceivedRequest[]) => boolean): Promise<void> {
    if (check(requests)) return Promise.resolve();
    return new Promise((resolve) => waiters.push({ check, resolve }));
  }
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `https://localhost:${port}${options.path ?? '/webhooks'}`,
    port,
    requests,
    get connections() {
      return connections;
    },
    received: (n) => until((r) => r.length >= n),
    until,
    respond(b) {
      behave = typeof b === 'function' ? b : () => b;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
