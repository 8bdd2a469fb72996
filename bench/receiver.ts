/**
 * The benchmark's receiver: a real HTTPS server on loopback, in its own
 * process. It answers 204 at once and measures ingest-to-receipt latency from
 * the envelope's created_at (set by Herald when it accepted the event).
 */
import { createServer } from 'node:https';
import { readFileSync } from 'node:fs';

const tls = new URL('../packages/server/test/fixtures/tls/', import.meta.url);
let count = 0;
let first = 0;
let last = 0;
let latencies: number[] = [];
/** created_at of each event, in ms (the bench splits warm-up from measurement by it). */
let created: number[] = [];

/**
 * Listens on `HERALD_BENCH_PORTS` ports (default 1), one server each with the
 * same handler: each port is an origin of its own, so a bench can spread its
 * endpoints over several origins (Herald caps requests in flight per origin).
 */
const options = { key: readFileSync(new URL('localhost-key.pem', tls)), cert: readFileSync(new URL('localhost.pem', tls)) };
function handle(req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse): void {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const now = Date.now();
    count += 1;
    if (count === 1) first = now;
    last = now;
    if (req.headers['x-service-event']) {
      const at = Date.parse(JSON.parse(Buffer.concat(chunks).toString()).created_at);
      latencies.push(now - at);
      created.push(at);
    }
    res.writeHead(204);
    res.end();
  });
}
const hang = process.env.HERALD_BENCH_HANG === '1';
/** Requests the hanging origin has taken and never answered. */
let hung = 0;
const servers = Array.from({ length: Number(process.env.HERALD_BENCH_PORTS ?? 1) }, () => {
  const server = createServer(options, handle);
  server.keepAliveTimeout = 60_000;
  return server;
});
/**
 * With `HERALD_BENCH_HANG=1`, one more port: an endpoint that takes each
 * request and never answers, until the sender gives up on it. Its requests
 * are not counted with the others.
 */
if (hang) {
  servers.push(
    createServer(options, (req) => {
      hung += 1;
      req.resume();
    }),
  );
}
Promise.all(servers.map((server) => new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port))))).then(
  (ports) => process.send!(hang ? { port: ports[0], ports: ports.slice(0, -1), hangPort: ports.at(-1) } : { port: ports[0], ports }),
);
process.on('message', (msg: { cmd: string }) => {
  if (msg.cmd === 'count') process.send!({ count, first, last, hung, latencies: [], created: [] });
  if (msg.cmd === 'stats') process.send!({ count, first, last, hung, latencies, created });
  if (msg.cmd === 'reset') {
    count = 0;
    latencies = [];
    created = [];
  }
  if (msg.cmd === 'exit') {
    // The hanging port's requests would hold close() until their senders gave up.
    for (const server of servers) server.closeAllConnections();
    Promise.all(servers.map((server) => new Promise((r) => server.close(r)))).then(() => process.exit(0));
  }
});
