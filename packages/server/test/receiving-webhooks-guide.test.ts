import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { connect, createServer as createNetServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { verifySync } from '@herald/verify/node';
import { DEFAULT_RETRY } from '../src/config.ts';
import { refusedAddressMessage } from '../src/core/address-policy.ts';
import { classifyOutcome } from '../src/core/outcome.ts';
import { nextAttemptAt } from '../src/core/retry-policy.ts';
import { describeTransportError } from '../src/outbound/transport-errors.ts';
import { assertBuilt } from './helpers/built.ts';
import { ENGINES } from './helpers/engines.ts';
import { alarmData, createTestHerald, type TestHerald } from './helpers/herald.ts';
import { startReceiver } from './helpers/receiver.ts';
import { TLS } from './helpers/tls.ts';

/**
 * docs/receiving-webhooks.md: its example receivers (docs/examples/receivers/)
 * are shown in it verbatim, and each runs as a real process that the real
 * dispatcher delivers to. Herald sends only over HTTPS, so each example sits
 * behind a small TLS-terminating proxy (as it would behind nginx or a load
 * balancer in production) that passes the request's bytes and headers through
 * unchanged. Every signature the examples check is one Herald made; the
 * tampered and replayed requests are Herald's own requests, captured at the
 * proxy and altered. The guide's example request and its openssl check are
 * run too.
 */

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const EXAMPLES = join(ROOT, 'docs/examples/receivers');
const guide = readFileSync(join(ROOT, 'docs/receiving-webhooks.md'), 'utf8');
const SERVER_DIR = fileURLToPath(new URL('../', import.meta.url));

const has = (command: string) => spawnSync('sh', ['-c', `command -v ${command}`]).status === 0;

interface Example {
  name: string;
  file: string;
  /** The fence's language tag in the guide. */
  fence: string;
  /** Commands it needs; without one, its tests are skipped with a message. */
  needs: string[];
  /** The Debian package that provides them, for the skip message. */
  apt?: string;
  /** Builds what needs building, once; returns the command that serves on `port`. */
  prepare?(dir: string): void;
  command(port: number, dir: string): { cmd: string; args: string[]; cwd?: string };
}

const EXAMPLE_LIST: Example[] = [
  {
    name: 'Node.js (@herald/verify)',
    file: 'node/receiver.mjs',
    fence: 'js',
    needs: [],
    // Plain node, as a receiver runs it: @herald/verify resolves to its build.
    command: () => (assertBuilt(), { cmd: process.execPath, args: [join(EXAMPLES, 'node/receiver.mjs')], cwd: SERVER_DIR }),
  },
  {
    name: 'Python (standard library)',
    file: 'python/receiver.py',
    fence: 'python',
    needs: ['python3'],
    apt: 'python3',
    command: () => ({ cmd: 'python3', args: [join(EXAMPLES, 'python/receiver.py')] }),
  },
  {
    name: 'Go (standard library)',
    file: 'go/receiver.go',
    fence: 'go',
    needs: ['go'],
    apt: 'golang-go',
    prepare(dir) {
      // Built once, then run as a binary: `go run` would leave its child running when stopped.
      execFileSync('go', ['build', '-o', join(dir, 'receiver'), join(EXAMPLES, 'go/receiver.go')], {
        env: { ...process.env, GOCACHE: goCache() },
        stdio: 'pipe',
      });
    },
    command: (_port, dir) => ({ cmd: join(dir, 'receiver'), args: [] }),
  },
  {
    name: 'Ruby (standard library)',
    file: 'ruby/receiver.rb',
    fence: 'ruby',
    needs: ['ruby'],
    apt: 'ruby',
    command: () => ({ cmd: 'ruby', args: [join(EXAMPLES, 'ruby/receiver.rb')] }),
  },
  {
    name: 'PHP (standard library)',
    file: 'php/receiver.php',
    fence: 'php',
    needs: ['php'],
    apt: 'php-cli',
    command: (port) => ({ cmd: 'php', args: ['-S', `127.0.0.1:${port}`, join(EXAMPLES, 'php/receiver.php')] }),
  },
];

/**
 * Go's build cache: GOCACHE when it is set, else a folder of this run's own,
 * which the builds for both engines share and which goes with the run.
 */
let ownGoCache: string | undefined;
function goCache(): string {
  return process.env.GOCACHE ?? (ownGoCache ??= mkdtempSync(join(tmpdir(), 'herald-guide-gocache-')));
}
after(() => {
  if (ownGoCache) rmSync(ownGoCache, { recursive: true, force: true });
});

/** A request as Herald sent it, captured at the proxy. */
interface Captured {
  path: string;
  rawHeaders: string[];
  body: Buffer;
}

interface Answer {
  status: number;
  body: string;
}

async function freePort(): Promise<number> {
  const server = createNetServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Sends a request to the example's own port, over plain HTTP. */
function send(port: number, path: string, headers: Record<string, string>, body: Buffer): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method: 'POST', path, headers: { ...headers, 'Content-Length': String(body.length), Connection: 'close' }, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** The captured headers, names as sent, without the hop-by-hop ones the proxy sets itself. */
function headersOf(rawHeaders: string[]): Record<string, string> {
  const headers: Record<string, string> = {};
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    if (!['connection', 'content-length', 'keep-alive', 'transfer-encoding'].includes(name.toLowerCase())) headers[name] = rawHeaders[i + 1]!;
  }
  return headers;
}

/** HTTPS in front of the example's HTTP port: the bytes and headers pass through as they came. */
async function startTlsProxy(targetPort: number, captured: Captured[]) {
  const server = createHttpsServer({ key: TLS.key, cert: TLS.cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const request: Captured = { path: req.url ?? '/', rawHeaders: req.rawHeaders, body: Buffer.concat(chunks) };
      captured.push(request);
      send(targetPort, request.path, headersOf(request.rawHeaders), request.body).then(
        (answer) => res.writeHead(answer.status, { 'content-type': 'text/plain' }).end(answer.body),
        () => res.writeHead(502).end('the example receiver is not answering'),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `https://localhost:${port}/webhooks/herald`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

interface Running {
  output(): string;
  /** Resolves once the example has printed `text`; rejects if it exits first. */
  printed(text: string): Promise<void>;
  stop(): Promise<void>;
}

/** Starts an example and resolves once its port accepts connections. */
async function startExample(example: Example, dir: string, port: number, env: Record<string, string>): Promise<Running> {
  const { cmd, args, cwd } = example.command(port, dir);
  const child: ChildProcess = spawn(cmd, args, { cwd, env: { ...process.env, ...env, PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const listeners = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    output += chunk.toString('utf8');
    for (const listener of listeners) listener();
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  let exited = false;
  const exit = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  void exit.then(() => {
    exited = true;
    for (const listener of listeners) listener();
  });
  const printed = (text: string) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (output.includes(text)) {
          listeners.delete(check);
          resolve();
        } else if (exited) {
          listeners.delete(check);
          reject(new Error(`${example.file} exited without printing ${JSON.stringify(text)}:\n${output}`));
        }
      };
      listeners.add(check);
      check();
    });
  // Ready when the port accepts a connection (interpreters print nothing reliable on start).
  for (;;) {
    if (exited) throw new Error(`${example.file} exited on start:\n${output}`);
    const accepted = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => {
        socket.destroy();
        resolve(true);
      });
      socket.on('error', () => resolve(false));
    });
    if (accepted) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    output: () => output,
    printed,
    async stop() {
      if (!exited) child.kill('SIGTERM');
      await exit;
    },
  };
}

describe('docs/receiving-webhooks.md shows the example receivers verbatim', () => {
  for (const example of EXAMPLE_LIST) {
    test(example.file, () => {
      const source = readFileSync(join(EXAMPLES, example.file), 'utf8');
      assert.ok(guide.includes(`\`\`\`${example.fence}\n${source}\`\`\`\n`), `the guide no longer shows docs/examples/receivers/${example.file} as it is`);
    });
  }
});

const missing = (example: Example) => example.needs.filter((command) => !has(command));

for (const engine of ENGINES) {
  for (const example of EXAMPLE_LIST) {
    const absent = missing(example);
    const skip = absent.length > 0 ? `${absent.join(', ')} not installed (apt-get install ${example.apt}); .ci/run installs it` : false;
    describe(`guide example ${example.file}: ${example.name} [${engine}]`, { skip }, () => {
      let h: TestHerald;
      let dir: string;
      let port: number;
      let proxy: Awaited<ReturnType<typeof startTlsProxy>>;
      let receiver: Running;
      const captured: Captured[] = [];
      let current: { id: string; secret: string };

      const delivery = async (eventId: string) => {
        const { rows } = await h.db.query<{ state: string; last_status: number | null }>('SELECT state, last_status FROM deliveries WHERE event_id = $1', [eventId]);
        assert.equal(rows.length, 1);
        return rows[0]!;
      };
      const answerOf = async (eventId: string) => {
        const { rows } = await h.db.query<{ response_excerpt: Uint8Array | null }>('SELECT response_excerpt FROM attempts WHERE event_id = $1', [eventId]);
        return rows[0]?.response_excerpt ? Buffer.from(rows[0].response_excerpt).toString('utf8') : '';
      };
      /**
       * Publishes an event and lets the dispatcher send it. Herald signs with
       * the injected clock and the examples check against the real one, as in
       * production: the test clock is set to the real time (moved by
       * `offsetMs`) just before, so a slow machine cannot age a request.
       */
      const publishAndSend = async (type: string, data: unknown, offsetMs = 0) => {
        h.clock.set(new Date(Date.now() + offsetMs));
        const published = await h.api('POST', '/v1/events', { type, data });
        assert.equal(published.status, 202);
        await h.dispatcher.tick();
        return published.json.id as string;
      };
      /** A request Herald just sent and the example accepted, as the proxy saw it. */
      const sentAndCaptured = async () => {
        const eventId = await publishAndSend('alarm.created', alarmData());
        assert.equal((await delivery(eventId)).state, 'succeeded');
        const request = captured.find((c) => headersOf(c.rawHeaders)['X-Service-Event-ID'] === eventId);
        assert.ok(request, 'the proxy saw the delivery');
        return request;
      };
      const shipment = { id: 48213, origin: 'Rotterdam', destination: 'Zürich' };

      before(async () => {
        dir = mkdtempSync(join(tmpdir(), 'herald-guide-'));
        example.prepare?.(dir);
        h = await createTestHerald(engine);
        port = await freePort();
        proxy = await startTlsProxy(port, captured);
        const endpoint = async (types: string[]) => {
          const res = await h.api('POST', '/v1/endpoints', { url: proxy.url, event_types: types });
          assert.equal(res.status, 201);
          return { id: res.json.id as string, secret: res.json.secret as string };
        };
        current = await endpoint(['alarm.created']);
        const previous = await endpoint(['shipment.created']); // the secret the receiver still accepts while rotating
        await endpoint(['shipment.completed']); // a secret the receiver does not hold
        receiver = await startExample(example, dir, port, { HERALD_WEBHOOK_SECRET: current.secret, HERALD_WEBHOOK_SECRET_PREVIOUS: previous.secret });
      });
      after(async () => {
        await receiver?.stop();
        await proxy?.close();
        await h?.close();
        if (dir) rmSync(dir, { recursive: true, force: true });
      });

      test('verifies a real delivery (non-ASCII body included) and answers 204', async () => {
        const eventId = await publishAndSend('alarm.created', alarmData());
        assert.deepEqual(await delivery(eventId), { state: 'succeeded', last_status: 204 }, receiver.output());
        await receiver.printed(`received alarm.created ${eventId}`);
      });

      test('accepts the test event (webhook.test) that the panel and the API send', async () => {
        h.clock.set(new Date());
        const res = await h.api('POST', `/v1/endpoints/${current.id}/test`);
        assert.equal(res.status, 200);
        assert.equal(res.json.outcome, 'succeeded', res.json.error ?? receiver.output());
        assert.equal(res.json.status_code, 204);
        await receiver.printed(`received webhook.test ${res.json.event_id}`);
      });

      test('accepts a request signed with the previous secret (HERALD_WEBHOOK_SECRET_PREVIOUS)', async () => {
        const eventId = await publishAndSend('shipment.created', shipment);
        assert.deepEqual(await delivery(eventId), { state: 'succeeded', last_status: 204 }, receiver.output());
        await receiver.printed(`received shipment.created ${eventId}`);
      });

      test('answers 400 to a secret it does not hold, and Herald does not retry it', async () => {
        const eventId = await publishAndSend('shipment.completed', shipment);
        assert.deepEqual(await delivery(eventId), { state: 'failed', last_status: 400 });
        assert.match(await answerOf(eventId), /signature/i, 'the reason, in the attempt log');
      });

      for (const [when, offsetMs] of [['old', -400_000], ['ahead', 400_000]] as const) {
        test(`answers 400 to a request Herald signed with a timestamp 400 s ${when}`, async () => {
          const eventId = await publishAndSend('alarm.created', alarmData(), offsetMs);
          assert.deepEqual(await delivery(eventId), { state: 'failed', last_status: 400 });
          assert.match(await answerOf(eventId), /300 s/);
        });
      }

      test('a captured request: accepted again unchanged within 300 s, refused with a changed body or no signature', async () => {
        const original = await sentAndCaptured();
        const headers = headersOf(original.rawHeaders);
        assert.equal((await send(port, original.path, headers, original.body)).status, 204, 'a replay inside the tolerance passes: de-duplicate by event id');

        const tampered = Buffer.from(original.body.toString('utf8').replace('"severity":"high"', '"severity":"low!"'));
        assert.notDeepEqual(tampered, original.body);
        const refused = await send(port, original.path, headers, tampered);
        assert.equal(refused.status, 400);
        assert.match(refused.body, /signature/i);

        const unsigned = { ...headers };
        delete unsigned['X-Service-Signature'];
        assert.equal((await send(port, original.path, unsigned, original.body)).status, 400);
      });

      test('takes any of several v1= signatures in the header', async () => {
        const original = await sentAndCaptured();
        const headers = headersOf(original.rawHeaders);
        const several = { ...headers, 'X-Service-Signature': `v1=${'0'.repeat(64)} v2=abc ${headers['X-Service-Signature']}` };
        assert.equal((await send(port, original.path, several, original.body)).status, 204);
        const none = { ...headers, 'X-Service-Signature': `v1=${'0'.repeat(64)} v2=abc` };
        assert.equal((await send(port, original.path, none, original.body)).status, 400);
      });

      test('a regenerated secret signs the very next request: the receiver refuses it until it knows the new secret', async () => {
        const rotated = await h.api('POST', `/v1/endpoints/${current.id}/rotate-secret`);
        assert.equal(rotated.status, 200);
        const eventId = await publishAndSend('alarm.created', alarmData());
        assert.deepEqual(await delivery(eventId), { state: 'failed', last_status: 400 });
      });
    });
  }
}

/** The fenced ```<lang> block of the guide that contains `marker`. */
function guideBlock(lang: string, marker: string): string {
  const blocks = [...guide.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].filter((m) => m[1] === lang && m[2]!.includes(marker));
  assert.equal(blocks.length, 1, `one \`\`\`${lang} block with ${marker} in the guide`);
  return blocks[0]![2]!;
}

describe('the example request in the guide', () => {
  test('is signed with the example secret the guide names, and carries every header Herald sends', () => {
    const block = guideBlock('http', 'X-Service-Signature:');
    const [head, body] = block.split(/\n\n/, 2) as [string, string];
    const headers: Record<string, string> = {};
    for (const line of head.split('\n').slice(1)) {
      const at = line.indexOf(': ');
      headers[line.slice(0, at)] = line.slice(at + 2);
    }
    assert.match(head.split('\n')[0]!, /^POST \/\S+ HTTP\/1\.1$/);
    const secret = /`(whsec_[A-Za-z0-9_-]+)`/.exec(guide)?.[1];
    assert.ok(secret, 'the guide names the example secret');
    const rawBody = body.replace(/\n$/, '');
    assert.equal(headers['content-length'], String(Buffer.byteLength(rawBody)));
    const event = verifySync({ body: rawBody, headers, secret, now: Number(headers['X-Service-Timestamp']) });
    assert.equal(event.id, headers['X-Service-Event-ID']);
    assert.equal(event.type, headers['X-Service-Event']);
    for (const name of ['Content-Type', 'User-Agent', 'X-Service-Event', 'X-Service-Event-ID', 'X-Service-Delivery-ID', 'X-Service-Timestamp', 'X-Service-Signature']) {
      assert.ok(name in headers, `the example shows ${name}`);
    }
    assert.equal(headers['Content-Type'], 'application/json; charset=utf-8');
    assert.equal(headers['User-Agent'], 'Service-Webhooks/1.0');
  });
});

for (const engine of ENGINES) {
  const absent = ['openssl', 'jq', 'sh'].filter((command) => !has(command));
  const skip = absent.length > 0 ? `${absent.join(', ')} not installed` : false;
  describe(`the guide's openssl check of a captured request [${engine}]`, { skip }, () => {
    test('says valid for a request Herald sent, taken from the attempt log, and INVALID once the body changes', async () => {
      const h = await createTestHerald(engine);
      const receiver = await startReceiver();
      const dir = mkdtempSync(join(tmpdir(), 'herald-guide-sh-'));
      try {
        const endpoint = await h.api('POST', '/v1/endpoints', { url: receiver.url, event_types: ['alarm.created'] });
        await h.api('POST', '/v1/events', { type: 'alarm.created', data: alarmData() });
        assert.equal((await h.dispatcher.tick()).succeeded, 1);
        const [attempt] = (await h.api('GET', `/v1/endpoints/${endpoint.json.id}/attempts`)).json.data;
        const detail = await h.api('GET', `/v1/endpoints/${endpoint.json.id}/attempts/${attempt.id}`);
        writeFileSync(join(dir, 'attempt.json'), JSON.stringify(detail.json));

        const script = guideBlock('sh', 'openssl dgst');
        const run = (code: string) =>
          execFileSync('sh', ['-c', code], { cwd: dir, env: { ...process.env, HERALD_WEBHOOK_SECRET: endpoint.json.secret }, encoding: 'utf8' }).trim();
        assert.equal(run(script), 'valid');
        assert.deepEqual(readFileSync(join(dir, 'body.json')), receiver.requests[0]!.body, 'body.json holds the bytes Herald sent');

        // The same check, body.json changed by one byte (and not extracted again).
        writeFileSync(join(dir, 'body.json'), Buffer.concat([receiver.requests[0]!.body, Buffer.from(' ')]));
        assert.equal(run(script.replace(/^jq -j .*$/m, '')), 'INVALID');
      } finally {
        rmSync(dir, { recursive: true, force: true });
        await receiver.close();
        await h.close();
      }
    });
  });
}

/** "2 d 17 h 6 min", "1 min 12 s": the guide's way of writing a duration. */
function formatDuration(ms: number): string {
  let s = Math.round(ms / 1000);
  const parts: string[] = [];
  for (const [unit, size] of [['d', 86_400], ['h', 3_600], ['min', 60], ['s', 1]] as const) {
    if (s >= size) {
      parts.push(`${Math.floor(s / size)} ${unit}`);
      s %= size;
    }
  }
  return parts.join(' ') || '0 s';
}

/** The rows of the guide's retry table, computed from the default schedule. */
function retryRows(): string[] {
  const now = new Date(0);
  const delay = (attempt: number, random: number) => nextAttemptAt({ attempt, now, random: () => random, schedule: DEFAULT_RETRY })!.getTime();
  const rows: string[] = [];
  let [nominal, low, high] = [0, 0, 0];
  for (let attempt = 1; attempt <= DEFAULT_RETRY.maxRetries; attempt++) {
    const wait = delay(attempt, 0.5);
    nominal += wait;
    low += delay(attempt, 0);
    high += delay(attempt, 1);
    rows.push(`| ${attempt + 1} | ${formatDuration(wait)} | ${formatDuration(nominal)} | ${formatDuration(low)} to ${formatDuration(high)} |`);
  }
  return rows;
}

describe("the guide's tables follow the code", () => {
  test('the retry schedule is the default one, jitter included', () => {
    assert.equal(nextAttemptAt({ attempt: DEFAULT_RETRY.maxRetries + 1, now: new Date(0), random: () => 0.5, schedule: DEFAULT_RETRY }), null, 'no retry after the last');
    for (const row of retryRows()) assert.ok(guide.includes(row), `the guide's retry table lacks\n${row}`);
  });

  test('the troubleshooting table names the messages the attempt log shows', () => {
    const transport = (code: string, message = '') => describeTransportError(Object.assign(new Error(message), { code }), 10_000, { aborted: false, timedOut: false }).message;
    const messages = [
      describeTransportError(new Error('x'), 10_000, { aborted: false, timedOut: true }).message,
      describeTransportError(new Error('x'), 10_000, { aborted: true, timedOut: false }).message,
      transport('ECONNREFUSED'),
      transport('ECONNRESET'),
      transport('ENOTFOUND'),
      transport('EHOSTUNREACH'),
      ...['CERT_HAS_EXPIRED', 'CERT_NOT_YET_VALID', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'ERR_TLS_CERT_ALTNAME_INVALID'].map((code) => transport(code)),
      classifyOutcome({ stage: 'response', status: 429 }).error!,
      classifyOutcome({ stage: 'response', status: 503 }).error!,
      classifyOutcome({ stage: 'response', status: 400 }).error!,
      classifyOutcome({ stage: 'response', status: 101 }).error!,
      ...classifyOutcome({ stage: 'response', status: 301, location: 'https://…' }).error!.split('https://…'),
      refusedAddressMessage('hooks.example.com', '10.0.0.5', { allowed: false, kind: 'private' }).replace('hooks.example.com ', ''),
    ];
    for (const message of messages) assert.ok(guide.includes(message), `the troubleshooting table lacks "${message}"`);
  });
});
