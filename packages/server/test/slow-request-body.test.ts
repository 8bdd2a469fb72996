import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { ENGINES } from './helpers/engines.ts';
import { alarmData, createTestHerald, type TestHerald } from './helpers/herald.ts';

const BOUND_MS = 300;
/** Destroyed at the end, so a server that never closes them cannot hold the run. */
const sockets = new Set<Socket>();

/** Connects, writes `chunks`, then stalls; resolves with all the server sent once it closes the connection. */
function stallAfter(port: number, chunks: string[]): Promise<{ received: string; elapsedMs: number }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const socket: Socket = connect({ port, host: '127.0.0.1' }, () => {
      for (const chunk of chunks) socket.write(chunk);
    });
    sockets.add(socket);
    let received = '';
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => (received += d));
    socket.on('error', reject);
    socket.on('close', () => resolve({ received, elapsedMs: performance.now() - started }));
  });
}

function parseResponse(raw: string): { status: number; headers: string; body: any } {
  const [head, body] = raw.split('\r\n\r\n', 2) as [string, string];
  return { status: Number(head.split(' ')[1]), headers: head.toLowerCase(), body: body ? JSON.parse(body) : undefined };
}

for (const engine of ENGINES) {
  describe(`a request must arrive within HERALD_BODY_TIMEOUT_MS [${engine}]`, () => {
    let h: TestHerald;
    let port: number;
    before(async () => {
      h = await createTestHerald(engine, { bodyTimeoutMs: BOUND_MS });
      await h.app.listen({ host: '127.0.0.1', port: 0 });
      port = (h.app.server.address() as { port: number }).port;
    });
    after(async () => {
      for (const socket of sockets) socket.destroy();
      await h.close();
    });

    // The test's own timeout is the failure mode without a bound: the server would hold the socket for ever.
    test('headers and half a body, then nothing: 408 problem+json and the connection closed', { timeout: 20_000 }, async () => {
      const body = JSON.stringify({ type: 'alarm.created', data: alarmData() });
      const { received, elapsedMs } = await stallAfter(port, [
        `POST /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${h.apiKey}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`,
        body.slice(0, body.length / 2),
      ]);
      const res = parseResponse(received);
      assert.equal(res.status, 408, received);
      assert.match(res.headers, /content-type: application\/problem\+json/);
      assert.equal(res.body.code, 'request_timeout');
      assert.match(res.body.detail, new RegExp(`within ${BOUND_MS} ms`));
      // Node looks for overdue requests every second at most, so the bound plus that.
      assert.ok(elapsedMs < BOUND_MS + 5_000, `closed after ${Math.round(elapsedMs)} ms`);
      const stored = await h.db.query('SELECT 1 FROM events');
      assert.equal(stored.rowCount, 0, 'the half request did nothing');
    });

    test('headers that never end are cut off the same way', { timeout: 20_000 }, async () => {
      const { received } = await stallAfter(port, ['GET /v1/endpoints HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: a']);
      assert.equal(parseResponse(received).status, 408, received);
    });

    test('a connection that sends nothing at all is closed too', { timeout: 20_000 }, async () => {
      const { received } = await stallAfter(port, []);
      assert.equal(parseResponse(received).status, 408, received);
    });

    test('a whole request is unaffected: the bound covers receiving it, not answering it', async () => {
      const res = await fetch(`http://127.0.0.1:${port}/v1/events`, {
        method: 'POST',
        headers: { authorization: `Bearer ${h.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ type: 'alarm.created', data: alarmData() }),
      });
      assert.equal(res.status, 202);
    });
  });
}
