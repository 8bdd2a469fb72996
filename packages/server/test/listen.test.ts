import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { X509Certificate } from 'node:crypto';
import { connect as tlsConnect, type ConnectionOptions, type PeerCertificate } from 'node:tls';
import { createServer as createHttpsServer } from 'node:https';
import { verify } from '@herald/verify';
import { request } from 'undici';
import { loadConfig } from '../src/config.ts';
import { devCaPaths, loadOrCreateDevCa, mintServerCertificate } from '../src/dev/dev-ca.ts';
import { devTlsOptions } from '../src/dev/dev-trust.ts';
import { ConfigError } from '../src/errors.ts';
import { cleanEnv, runCli, spawnCli, startHerald, type RunningHerald, type StreamingCli } from './helpers/cli.ts';
import { createScratchPostgres, ENGINES } from './helpers/engines.ts';
import { alarmData } from './helpers/herald.ts';
import { startReceiver } from './helpers/receiver.ts';
import { TLS } from './helpers/tls.ts';

const TEST_CA_FILE = fileURLToPath(new URL('./fixtures/tls/ca.pem', import.meta.url));

/** A local app behind --forward-to: records each request and answers with `status`. */
async function startApp(): Promise<{ url: string; received: Array<{ headers: IncomingHttpHeaders; body: Buffer }>; status: number; close(): Promise<void> }> {
  const app = {
    url: '',
    received: [] as Array<{ headers: IncomingHttpHeaders; body: Buffer }>,
    status: 200,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      app.received.push({ headers: req.headers, body: Buffer.concat(chunks) });
      res.writeHead(app.status).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  app.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`;
  return app;
}

async function api(herald: RunningHerald, key: string, method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const res = await request(`${herald.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.body.text();
  return { status: res.statusCode, json: text ? JSON.parse(text) : undefined };
}

/** The newest attempts of an endpoint, once there are at least `count` (the recorder writes shortly after the answer). */
async function attemptsOnceRecorded(herald: RunningHerald, key: string, endpointId: string, count: number): Promise<any[]> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const { json } = await api(herald, key, 'GET', `/v1/endpoints/${endpointId}/attempts`);
    if (json.data.length >= count) return json.data;
    if (Date.now() > deadline) throw new Error(`fewer than ${count} attempts recorded: ${JSON.stringify(json)}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

const READY = /Endpoint (\S+) (registered|reused|reused \(new signing secret\)): https:\/\/localhost:(\d+)\/\nEvents: (.*)\nSigning secret: (whsec_\S+)/;

for (const engine of ENGINES) {
  describe(`herald listen against herald start --dev (${engine})`, () => {
    let dir: string;
    let env: NodeJS.ProcessEnv;
    let herald: RunningHerald;
    let scratch: { url: string; drop(): Promise<void> } | undefined;
    let key: string;
    let app: Awaited<ReturnType<typeof startApp>>;
    let listener: StreamingCli | undefined;
    let endpointId: string;
    let port: number;
    let secret: string;

    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'herald-listen-'));
      // No allowed networks of its own: loopback is reachable only because of --dev.
      // NODE_EXTRA_CA_CERTS: the test CA, which development mode must keep trusting.
      env = cleanEnv({ HERALD_DATA_DIR: dir, HERALD_ALLOWED_NETWORKS: '', NODE_EXTRA_CA_CERTS: TEST_CA_FILE });
      if (engine === 'postgres') {
        scratch = await createScratchPostgres();
        env = { ...env, DATABASE_URL: scratch.url, HERALD_ENCRYPTION_KEY: randomBytes(32).toString('base64') };
      }
      herald = await startHerald(['--dev'], env);
      const account = await runCli(['--json', 'accounts', 'create', '--name', 'Listen Co'], env);
      assert.equal(account.code, 0, account.stderr);
      const created = await runCli(['--json', 'keys', 'create', '--account', JSON.parse(account.stdout).id], env);
      assert.equal(created.code, 0, created.stderr);
      key = JSON.parse(created.stdout).key;
      env = { ...env, HERALD_URL: herald.url, HERALD_API_KEY: key };
      app = await startApp();
    });
    after(async () => {
      await listener?.stop();
      await app?.close();
      await herald?.stop();
      await scratch?.drop();
      rmSync(dir, { recursive: true, force: true });
    });

    test('start --dev warns, and makes the development CA once, private', () => {
      assert.match(herald.stderr(), /WARNING: development mode, for your own machine only/);
      const paths = devCaPaths(dir);
      assert.equal(statSync(paths.dir).mode & 0o777, 0o700);
      assert.equal(statSync(paths.cert).mode & 0o777, 0o600);
      assert.equal(statSync(paths.key).mode & 0o777, 0o600);
    });

    test('CAs from NODE_EXTRA_CA_CERTS stay trusted in development mode', async () => {
      const receiver = await startReceiver();
      try {
        const created = await api(herald, key, 'POST', '/v1/endpoints', { url: receiver.url, event_types: ['alarm.created'] });
        assert.equal(created.status, 201, JSON.stringify(created.json));
        const sent = await api(herald, key, 'POST', `/v1/endpoints/${created.json.id}/test`, {});
        assert.equal(sent.json.outcome, 'succeeded', JSON.stringify(sent.json));
        assert.equal((await api(herald, key, 'DELETE', `/v1/endpoints/${created.json.id}`)).status, 204);
      } finally {
        await receiver.close();
      }
    });

    test('listen registers an endpoint, verifies each delivery, forwards the same bytes and headers, and Herald records the success', async () => {
      listener = spawnCli(['--json', 'listen', '--port', '0', '--forward-to', app.url], env);
      const ready = await listener.waitFor(READY, { in: 'stderr' });
      endpointId = ready[1]!;
      port = Number(ready[3]);
      secret = ready[5]!;
      assert.equal(ready[2], 'registered');
      assert.equal(ready[4], 'alarm.created, alarm.resolved, shipment.completed, shipment.created', 'every type in the catalog by default');
      assert.match(listener.stderr(), new RegExp(`Ready! Forwarding to ${app.url.replace(/[/.]/g, '\\$&')}`));

      const published = await api(herald, key, 'POST', '/v1/events', { type: 'alarm.created', data: alarmData() });
      assert.equal(published.status, 202, JSON.stringify(published.json));
      const eventId: string = published.json.id;
      const line = await listener.waitFor(new RegExp(`^\\{.*"event_id":"${eventId}".*\\}$`, 'm'));
      const printed = JSON.parse(line[0]);
      assert.equal(printed.event_type, 'alarm.created');
      assert.deepEqual(printed.signature, { verified: true });
      assert.equal(printed.body.id, eventId);
      assert.equal(printed.forward.status, 200);
      assert.equal(printed.answered, 200);
      assert.equal(listener.stdout().trim().split('\n').length, 1, 'with --json, stdout holds one line per delivery and nothing else');

      // The app got the very bytes Herald signed, with Herald's headers.
      assert.equal(app.received.length, 1);
      const got = app.received[0]!;
      const event = await verify({ body: got.body, headers: got.headers, secret });
      assert.equal(event.id, eventId);
      for (const [name, value] of Object.entries(printed.headers as Record<string, string>)) {
        if (/^(host|connection|content-length)$/i.test(name)) continue;
        assert.equal(got.headers[name.toLowerCase()], value, name);
      }
      assert.equal(got.headers['content-length'], String(got.body.length));

      const [attempt] = await attemptsOnceRecorded(herald, key, endpointId, 1);
      assert.equal(attempt.event_id, eventId);
      assert.equal(attempt.outcome, 'succeeded');
      assert.equal(attempt.status_code, 200);
    });

    test("the app's 5xx reaches Herald as 502, so Herald retries", async () => {
      app.status = 503;
      const published = await api(herald, key, 'POST', '/v1/events', { type: 'alarm.created', data: alarmData() });
      const line = await listener!.waitFor(new RegExp(`^\\{.*"event_id":"${published.json.id}".*\\}$`, 'm'));
      const printed = JSON.parse(line[0]);
      assert.equal(printed.forward.status, 503);
      assert.equal(printed.answered, 502);
      const attempts = await attemptsOnceRecorded(herald, key, endpointId, 2);
      const attempt = attempts.find((a) => a.event_id === published.json.id);
      assert.equal(attempt.status_code, 502);
      assert.equal(attempt.outcome, 'retrying');
      app.status = 200;
    });

    test('Ctrl-C stops it with exit 0 and keeps the endpoint; a second listen on the port reuses it and its secret', async () => {
      assert.equal(await listener!.stop('SIGINT'), 0);
      assert.match(listener!.stderr(), new RegExp(`Stopped\\. Endpoint ${endpointId} stays registered`));
      listener = undefined;

      listener = spawnCli(['listen', '--port', String(port), '--events', 'alarm.created'], env);
      const ready = await listener.waitFor(READY);
      assert.equal(ready[1], endpointId);
      assert.equal(ready[2], 'reused');
      assert.equal(ready[4], 'alarm.created');
      assert.equal(ready[5], secret, 'the stored secret is still the endpoint’s, so it is kept');
      const { json: endpoints } = await api(herald, key, 'GET', '/v1/endpoints');
      assert.equal(endpoints.data.length, 1);
      assert.deepEqual(endpoints.data[0].event_types, ['alarm.created']);

      // Human output: time, type, ids, headers, pretty body, verdict.
      const published = await api(herald, key, 'POST', '/v1/events', { type: 'alarm.created', data: alarmData() });
      const block = await listener.waitFor(new RegExp(`alarm\\.created  event ${published.json.id}  delivery \\S+\\n[\\s\\S]*?answered Herald 204\\n`));
      assert.match(block[0], /^ {2}X-Service-Signature: v1=[0-9a-f]{64}$/m);
      assert.match(block[0], /^ {4}"type": "alarm.created",$/m);
      assert.match(block[0], /^ {2}signature: verified$/m);
      assert.equal(await listener.stop('SIGINT'), 0);
      listener = undefined;
    });

    test('a secret rotated elsewhere is rotated again, so listen always holds the current one', async () => {
      const rotated = await api(herald, key, 'POST', `/v1/endpoints/${endpointId}/rotate-secret`);
      assert.equal(rotated.status, 200);
      listener = spawnCli(['listen', '--port', String(port)], env);
      const ready = await listener.waitFor(READY);
      assert.equal(ready[2], 'reused (new signing secret)');
      assert.notEqual(ready[5], secret);
      assert.notEqual(ready[5], rotated.json.secret);
      assert.equal(await listener.stop('SIGTERM'), 0);
      listener = undefined;
    });
  });
}

describe('herald start without --dev', () => {
  let dir: string;
  let herald: RunningHerald | undefined;
  let listener: StreamingCli | undefined;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'herald-nodev-'));
    // A data directory that already holds a development CA.
    await loadOrCreateDevCa(dir);
  });
  after(async () => {
    await listener?.stop();
    await herald?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  async function withHerald(networks: string): Promise<{ env: NodeJS.ProcessEnv; key: string; herald: RunningHerald }> {
    await herald?.stop();
    herald = await startHerald([], cleanEnv({ HERALD_DATA_DIR: dir, HERALD_ALLOWED_NETWORKS: networks }));
    const env = cleanEnv({ HERALD_DATA_DIR: dir });
    const account = await runCli(['--json', 'accounts', 'create', '--name', 'No Dev'], env);
    const created = await runCli(['--json', 'keys', 'create', '--account', JSON.parse(account.stdout).id], env);
    const key = JSON.parse(created.stdout).key;
    return { env: { ...env, HERALD_URL: herald.url, HERALD_API_KEY: key }, key, herald };
  }

  test('refuses loopback endpoints, so listen cannot register', async () => {
    const { env } = await withHerald('');
    assert.doesNotMatch(herald!.stderr(), /development mode/);
    const res = await runCli(['listen', '--port', '0'], env);
    assert.equal(res.code, 1);
    assert.match(res.stderr, /^herald: url: cannot be used: .*\(400 invalid_url\)$/m);
  });

  test('with loopback allowed, still does not trust the development CA', async () => {
    const { env, key, herald: h } = await withHerald('127.0.0.0/8,::1/128');
    listener = spawnCli(['listen', '--port', '0'], env);
    const [, endpointId] = (await listener.waitFor(READY)) as unknown as string[];
    const sent = await api(h, key, 'POST', `/v1/endpoints/${endpointId}/test`, {});
    assert.equal(sent.json.outcome, 'failed');
    assert.match(sent.json.error, /^TLS: /);
    assert.doesNotMatch(listener.stdout(), /webhook\.test/, 'nothing reached the listener');
  });
});

describe('herald listen without a development CA', () => {
  test('says to start Herald with --dev', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'herald-noca-'));
    try {
      const res = await runCli(['listen'], cleanEnv({ HERALD_DATA_DIR: dir, HERALD_API_KEY: 'hk_x', HERALD_URL: 'http://127.0.0.1:9' }));
      assert.equal(res.code, 2, 'a setting to change: the usage exit code');
      assert.match(res.stderr, /^herald: no development CA in .*dev-ca; start Herald with: herald start --dev/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('development mode settings and trust', () => {
  test('HERALD_DEV=1 or --dev adds loopback to the allowed networks; anything else but 0/1/true/false is refused by name', () => {
    assert.equal(loadConfig({ env: {} }).dev, false);
    assert.deepEqual(loadConfig({ env: { HERALD_ALLOWED_NETWORKS: '10.0.0.0/8' } }).allowedNetworks, ['10.0.0.0/8']);
    assert.deepEqual(loadConfig({ env: { HERALD_DEV: '1', HERALD_ALLOWED_NETWORKS: '10.0.0.0/8' } }).allowedNetworks, ['10.0.0.0/8', '127.0.0.0/8', '::1/128']);
    assert.equal(loadConfig({ env: {}, flags: { dev: true } }).dev, true);
    assert.equal(loadConfig({ env: { HERALD_DEV: '0' } }).dev, false);
    assert.throws(() => loadConfig({ env: { HERALD_DEV: 'yes' } }), (err: unknown) => err instanceof ConfigError && /^--dev \/ HERALD_DEV: must be 1 or 0/.test(err.message));
  });

  test('the development CA is made once and kept, also when two processes start at once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'herald-devca-'));
    try {
      // Two at once (workers sharing a data directory): one CA wins, and both get it.
      const [first, second] = await Promise.all([loadOrCreateDevCa(dir), loadOrCreateDevCa(dir)]);
      const again = await loadOrCreateDevCa(dir);
      assert.equal(second.certPem, first.certPem);
      assert.equal(again.certPem, first.certPem);
      assert.equal(again.keyPem, first.keyPem);
      assert.deepEqual(readdirSync(dir), ['dev-ca'], 'no temporary directory is left behind');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("the development CA vouches for loopback names only; other CAs' certificates are checked as usual", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'herald-devca-'));
    try {
      const ca = await loadOrCreateDevCa(dir);
      const { checkServerIdentity } = devTlsOptions(ca.certPem);
      const peer = (pem: string) => {
        const x = new X509Certificate(pem);
        return { raw: x.raw, subject: { CN: 'localhost' }, subjectaltname: x.subjectAltName } as unknown as PeerCertificate;
      };
      const leaf = peer((await mintServerCertificate(ca)).certPem);
      assert.equal(checkServerIdentity!('localhost', leaf), undefined);
      assert.equal(checkServerIdentity!('127.0.0.1', leaf), undefined);
      assert.equal(checkServerIdentity!('::1', leaf), undefined);
      assert.match(String(checkServerIdentity!('example.com', leaf)), /signed by Herald's development CA, which is trusted for localhost and loopback addresses only/);
      // The test CA's localhost certificate is not the development CA's: the usual name check applies.
      assert.match(String(checkServerIdentity!('example.com', peer(TLS.cert))), /Hostname\/IP does not match/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('over a real handshake, a development-CA certificate for another host is refused, with the reason', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'herald-devca-'));
    const ca = await loadOrCreateDevCa(dir);
    // What a copy of the CA's key could make: a certificate for someone else's host.
    const forged = await mintServerCertificate(ca, { dnsNames: ['bank.example'], ips: [] });
    const server = createHttpsServer({ cert: forged.certPem, key: forged.keyPem }, (_req, res) => res.end());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const handshake = (options: ConnectionOptions) =>
      new Promise<string>((resolve) => {
        const socket = tlsConnect({ host: '127.0.0.1', port: (server.address() as AddressInfo).port, servername: 'bank.example', ...options }, () => {
          socket.destroy();
          resolve('trusted');
        });
        socket.on('error', (err) => resolve(err.message));
      });
    try {
      const { ca: cas } = devTlsOptions(ca.certPem);
      assert.equal(await handshake({ ca: cas }), 'trusted', 'the CA list alone would accept it');
      assert.match(await handshake(devTlsOptions(ca.certPem)), /signed by Herald's development CA, which is trusted for localhost and loopback addresses only/);
    } finally {
      server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
