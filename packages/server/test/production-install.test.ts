import { strict as assert } from 'node:assert';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { verifySync } from '@herald/verify/node';
import { cleanEnv } from './helpers/cli.ts';
import { startReceiver, type Receiver } from './helpers/receiver.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const CA = fileURLToPath(new URL('./fixtures/tls/ca.pem', import.meta.url));

/** The files a clone of this working tree has: tracked ones and new ones git does not ignore. */
function copyRepository(to: string): void {
  const listed = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: ROOT, encoding: 'utf8' });
  for (const file of listed.split('\0').filter(Boolean)) {
    if (!existsSync(join(ROOT, file))) continue; // deleted, not yet committed
    mkdirSync(dirname(join(to, file)), { recursive: true });
    copyFileSync(join(ROOT, file), join(to, file));
  }
}

/** Processes (other than this one) whose command line or working directory is inside `dir`. */
function processesIn(dir: string): string[] {
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    if (Number(pid) === process.pid) continue;
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
      let cwd = '';
      try {
        cwd = readlinkSync(`/proc/${pid}/cwd`);
      } catch {
        // Another user's process: its command line is enough.
      }
      if (cmdline.includes(dir) || cwd.startsWith(dir)) found.push(`${pid}: ${cmdline}`);
    } catch {
      // It ended while we looked.
    }
  }
  return found;
}

// What an operator (and the Dockerfile's build stage) does: scripts/build-release.sh
// installs, builds and prunes the dev dependencies, and release/ is started with
// plain node. Nothing here may lean on TypeScript, tsx or the sources.
describe('a production install', { skip: process.platform !== 'linux' && 'looks for left-over processes in /proc' }, () => {
  let scratch: string;
  let release: string;
  let receiver: Receiver;
  let herald: ChildProcess | undefined;

  before(async () => {
    scratch = mkdtempSync(join(tmpdir(), 'herald-release-'));
    copyRepository(join(scratch, 'repo'));
    receiver = await startReceiver();
    receiver.respond({ status: 204 });
  });
  after(async () => {
    herald?.kill('SIGKILL');
    await receiver?.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  test('scripts/build-release.sh builds release/ with no dev dependency and no TypeScript in it', { timeout: 300_000 }, () => {
    // prefer-offline: the packages come from npm's cache when it has them.
    execFileSync('bash', ['scripts/build-release.sh'], {
      cwd: join(scratch, 'repo'),
      env: { ...cleanEnv(), npm_config_prefer_offline: 'true', npm_config_update_notifier: 'false' },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    release = join(scratch, 'repo', 'release');
    for (const dev of ['typescript', 'tsx', 'vite', 'playwright-core', 'fast-check', '@types/node']) {
      assert.equal(existsSync(join(release, 'node_modules', dev)), false, `${dev} is a dev dependency and must be pruned`);
    }
    assert.equal(existsSync(join(release, 'packages/server/src')), false, 'release/ has no sources');
    assert.ok(existsSync(join(release, 'packages/server/dist/storage/migrations/001_initial.sql')), 'the migrations ship next to the compiled code');
    assert.ok(existsSync(join(release, 'packages/panel/dist/index.html')), 'the control panel is built');
  });

  test('herald start answers /healthz and /readyz, delivers an event over HTTPS, and SIGTERM ends it with exit 0 and nothing left behind', { timeout: 120_000 }, async () => {
    assert.ok(release, 'the build above succeeded');
    const dataDir = join(scratch, 'data');
    const bin = join(release, 'node_modules', '.bin', 'herald');
    const env = cleanEnv({
      HERALD_DATA_DIR: dataDir,
      HERALD_PORT: '0',
      HERALD_LOG_LEVEL: 'warn',
      // The receiver listens on loopback with the test CA's certificate.
      HERALD_ALLOWED_NETWORKS: '127.0.0.0/8,::1/128',
      NODE_EXTRA_CA_CERTS: CA,
    });
    // Started from a folder of its own, as a service manager would: nothing may depend on the working directory.
    const child = spawn(bin, ['start'], { cwd: scratch, env, stdio: ['ignore', 'ignore', 'pipe'] });
    herald = child;
    let err = '';
    const exited = new Promise<number | string>((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal ?? -1)));
    await new Promise<void>((resolve, reject) => {
      child.stderr!.on('data', (chunk: Buffer) => {
        err += chunk.toString();
        if (err.includes('First steps:')) resolve();
      });
      void exited.then((code) => reject(new Error(`herald start exited (${code}) before it was ready:\n${err}`)));
    });
    const url = /API: (\S+)/.exec(err)![1]!;
    const lock = JSON.parse(readFileSync(join(dataDir, 'herald.lock'), 'utf8')) as { pid: number };
    assert.equal(lock.pid, child.pid, 'Herald runs in the process that was started, not in a child of it');

    for (const path of ['/healthz', '/readyz']) {
      const res = await fetch(`${url}${path}`);
      assert.equal(res.status, 200, `${path}: ${await res.text()}`);
    }

    // The control panel is served from its build, script and all.
    const panel = await fetch(`${url}/`);
    const page = await panel.text();
    assert.equal(panel.status, 200, page);
    const script = /<script type="module"[^>]* src="([^"]+)"/.exec(page)?.[1];
    assert.ok(script, `the panel's page loads its script:\n${page}`);
    const asset = await fetch(`${url}${script}`);
    await asset.arrayBuffer();
    assert.equal(asset.status, 200);

    // The operator commands, from the same install, reach the running Herald through its admin socket.
    const cli = (args: string[]) => JSON.parse(execFileSync(bin, ['--json', ...args], { cwd: scratch, env, encoding: 'utf8' }));
    const account = cli(['accounts', 'create', '--name', 'Acme Logistics']) as { id: string };
    const { key } = cli(['keys', 'create', '--account', account.id]) as { key: string };
    const api = async (path: string, body: unknown) => {
      const res = await fetch(`${url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      return { status: res.status, json: (await res.json()) as Record<string, string> };
    };
    const endpoint = await api('/v1/endpoints', { url: receiver.url, event_types: ['shipment.created'] });
    assert.equal(endpoint.status, 201, JSON.stringify(endpoint.json));
    const event = await api('/v1/events', { type: 'shipment.created', data: { id: 'shp_1' } });
    assert.equal(event.status, 202, JSON.stringify(event.json));

    await receiver.received(1);
    const [delivery] = receiver.requests;
    assert.doesNotThrow(() => verifySync({ body: delivery!.body, headers: delivery!.headers, secret: endpoint.json.secret! }));
    assert.equal(JSON.parse(delivery!.body.toString()).type, 'shipment.created');

    child.kill('SIGTERM');
    assert.equal(await exited, 0, err);
    assert.match(err, /SIGTERM: finishing in-flight deliveries, then stopping/);
    assert.equal(existsSync(join(dataDir, 'herald.lock')), false, 'the data-directory lock was released');
    assert.deepEqual(processesIn(scratch), [], 'no process of the install is left running');
  });
});
