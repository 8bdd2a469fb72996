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

const server = createServer(
  { key: readFileSync(new URL('localhost-key.pem', tls)), cert: readFileSync(new URL('localhost.pem', tls)) },
  (req, res) => {
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
  },
);
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  process.send!({ port: (server.address() as { port: number }).port });
});
process.on('message', (msg: { cmd: string }) => {
  if (msg.cmd === 'count') process.send!({ count, first, last, latencies: [], created: [] });
  if (msg.cmd === 'stats') process.send!({ count, first, last, latencies, created });
  if (msg.cmd === 'reset') {
    count = 0;
    latencies = [];
    created = [];
  }
  if (msg.cmd === 'exit') server.close(() => process.exit(0));
});
