import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { READY_LINE } from '../src/cli/banner.ts';
import { heraldVersion } from '../src/cli/version.ts';
import { ENGINES } from './helpers/engines.ts';
import { createScratchPostgres } from './helpers/engines.ts';
import { cleanEnv, runCli, SERVER_DIR, startHerald, type CliResult } from './helpers/cli.ts';
import { startHeraldProcess } from './helpers/process.ts';
import { closedPort } from './helpers/ports.ts';

/**
 * `herald start` failing for a reason the operator can fix prints one line
 * naming the problem and the fix, and exits with the code of its kind
 * (docs/cli.md, "Exit codes"). Real processes, a real occupied port, real
 * PostgreSQL refusals.
 */

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'herald-startup-'));
  dirs.push(dir);
  return dir;
}
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const PASSWORD = 'not-to-be-printed-7Qx';
const key = () => randomBytes(32).toString('base64');

/** One line, with the prefix, no stack, no password; and the exit code of its kind. */
function assertOneLine(res: CliResult, exitCode: number, pattern: RegExp): void {
  assert.equal(res.code, exitCode, `exit ${exitCode} expected:\n${res.stderr}`);
  assert.equal(res.stderr.trimEnd().split('\n').length, 1, `one line expected:\n${res.stderr}`);
  assert.match(res.stderr, /^herald: /);
  assert.match(res.stderr, pattern);
  assert.doesNotMatch(res.stderr, /unexpected error|^\s+at /m);
  assert.ok(!res.stderr.includes(PASSWORD), 'the password of DATABASE_URL is never printed');
  assert.equal(res.stdout, '');
}


/** A URL of the test server with another database or user, and a password (trust auth ignores it). */
function testServerUrl(change: { database?: string; user?: string }): string {
  const url = new URL(process.env.HERALD_TEST_DATABASE_URL!);
  if (change.database) url.pathname = `/${change.database}`;
  if (change.user) url.username = change.user;
  url.password = PASSWORD;
  return url.toString();
}

const start = (env: Record<string, string>, args: string[] = []) => runCli(['start', '--port', '0', ...args], cleanEnv(env));

describe('herald start: the port', () => {
  for (const engine of ENGINES) {
    test(`a port already in use: exit 4, naming the port and --port (${engine})`, async (t) => {
      const holder: Server = createServer();
      await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
      t.after(() => new Promise((resolve) => holder.close(resolve)));
      const { port } = holder.address() as { port: number };
      const env: Record<string, string> = { HERALD_DATA_DIR: tempDir() };
      if (engine === 'postgres') {
        const scratch = await createScratchPostgres();
        t.after(() => scratch.drop());
        Object.assign(env, { DATABASE_URL: scratch.url, HERALD_ENCRYPTION_KEY: key() });
      }
      const res = await runCli(['start', '--host', '127.0.0.1', '--port', String(port)], cleanEnv(env));
      assertOneLine(res, 4, new RegExp(`^herald: port ${port} on 127\\.0\\.0\\.1 is already in use; stop what holds it, or pass --port$`, 'm'));
    });
  }
});

describe('herald start: the data directory', () => {
  test('held by a running Herald: exit 4, naming the holder', async () => {
    const dir = tempDir();
    const first = await startHerald(['--data-dir', dir]);
    try {
      const res = await start({ HERALD_DATA_DIR: dir });
      assertOneLine(res, 4, new RegExp(`is in use by Herald process ${first.child.pid}.*--data-dir`));
    } finally {
      assert.equal(await first.stop(), 0);
    }
  });

  test('a path through a file: exit 4, naming the directory and --data-dir', async () => {
    const file = join(tempDir(), 'a-file');
    writeFileSync(file, '');
    const res = await start({ HERALD_DATA_DIR: join(file, 'herald') });
    assertOneLine(res, 4, /^herald: the data directory .*a-file\/herald cannot be written: a part of the path is a file, not a directory .*--data-dir/);
  });

  // root may write anywhere: the permission bits cannot refuse it.
  test('a directory Herald may not write: exit 4', { skip: process.getuid?.() === 0 && 'runs as root, which permissions do not stop' }, async () => {
    const parent = tempDir();
    chmodSync(parent, 0o500);
    try {
      const res = await start({ HERALD_DATA_DIR: join(parent, 'herald') });
      assertOneLine(res, 4, /^herald: the data directory .* cannot be written: permission denied .*--data-dir/);
    } finally {
      chmodSync(parent, 0o700);
    }
  });

  test('an encryption.key that is not the database\u2019s: exit 2, naming the file', async () => {
    const dir = tempDir();
    const migrated = await runCli(['migrate', '--data-dir', dir]);
    assert.equal(migrated.code, 0, migrated.stderr);
    writeFileSync(join(dir, 'encryption.key'), `${key()}\n`);
    assertOneLine(await start({ HERALD_DATA_DIR: dir }), 2, /^herald: .*encryption\.key: is not the key/);
  });
});

describe('herald start: PostgreSQL that cannot be reached', () => {
  // No server is needed to be refused: these run whether or not a test server is set.
  test('connection refused: exit 3, naming host and port', async () => {
    const port = await closedPort();
    const res = await start({ DATABASE_URL: `postgres://herald:${PASSWORD}@127.0.0.1:${port}/herald`, HERALD_ENCRYPTION_KEY: key(), HERALD_DATA_DIR: tempDir() });
    assertOneLine(res, 3, new RegExp(`^herald: cannot connect to PostgreSQL on 127\\.0\\.0\\.1:${port}: connection refused; start PostgreSQL there, or correct the host and port in DATABASE_URL$`, 'm'));
  });

  test('a host name that does not resolve: exit 3, naming it', async () => {
    const res = await start({ DATABASE_URL: `postgres://herald:${PASSWORD}@no-such-host.invalid:5432/herald`, HERALD_ENCRYPTION_KEY: key(), HERALD_DATA_DIR: tempDir() });
    assertOneLine(res, 3, /^herald: cannot connect to PostgreSQL: the host name "no-such-host\.invalid" does not resolve; correct the host in DATABASE_URL$/m);
  });

  test('a server that accepts the connection and never answers: exit 3, naming the timeout and its setting', async (t) => {
    // Reads what it is sent (so it sees each connection end) and never answers.
    const silent = createServer((socket) => socket.resume());
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    t.after(() => new Promise((resolve) => silent.close(resolve)));
    const { port } = silent.address() as { port: number };
    const res = await start({
      DATABASE_URL: `postgres://herald:${PASSWORD}@127.0.0.1:${port}/herald`,
      HERALD_DATABASE_TIMEOUT_MS: '500',
      HERALD_ENCRYPTION_KEY: key(),
      HERALD_DATA_DIR: tempDir(),
    });
    assertOneLine(res, 3, new RegExp(`^herald: PostgreSQL on 127\\.0\\.0\\.1:${port} did not answer within 500 ms; .*HERALD_DATABASE_TIMEOUT_MS$`, 'm'));
  });

  test('without HERALD_ENCRYPTION_KEY: exit 2, naming the setting and how to make one', async () => {
    const res = await start({ DATABASE_URL: `postgres://herald:${PASSWORD}@127.0.0.1:5432/herald`, HERALD_DATA_DIR: tempDir() });
    assertOneLine(res, 2, /^herald: HERALD_ENCRYPTION_KEY: is required with DATABASE_URL.*openssl rand -base64 32/);
  });
});

describe('herald start: PostgreSQL refuses', { skip: !process.env.HERALD_TEST_DATABASE_URL && 'HERALD_TEST_DATABASE_URL is not set' }, () => {
  test('a database that does not exist: exit 3, with the createdb command', async () => {
    const name = `herald_missing_${randomBytes(4).toString('hex')}`;
    const url = testServerUrl({ database: name });
    const { hostname, port } = new URL(url);
    const res = await start({ DATABASE_URL: url, HERALD_ENCRYPTION_KEY: key(), HERALD_DATA_DIR: tempDir() });
    const pArg = port && port !== '5432' ? ` -p ${port}` : '';
    assertOneLine(res, 3, new RegExp(`^herald: database "${name}" does not exist on ${hostname.replace(/\./g, '\\.')}:${port || 5432}; create it with: createdb -h ${hostname.replace(/\./g, '\\.')}${pArg} -U postgres( -O \\S+)? ${name} `, 'm'));
  });

  test('a role that does not exist: exit 3, with the createuser command', async () => {
    const role = `herald_nobody_${randomBytes(4).toString('hex')}`;
    const res = await start({ DATABASE_URL: testServerUrl({ user: role }), HERALD_ENCRYPTION_KEY: key(), HERALD_DATA_DIR: tempDir() });
    assertOneLine(res, 3, new RegExp(`^herald: PostgreSQL on \\S+ refused role "${role}" .*; create the role with: createuser .*--pwprompt ${role}, or correct the user in DATABASE_URL`, 'm'));
  });
});

describe('herald start: the banner says what this process does', () => {
  test('all (the default): the API, the panel, first steps, and that it delivers', async () => {
    const herald = await startHeraldProcess(['--port', '0', '--data-dir', tempDir()], {});
    try {
      assert.match(herald.stderr(), /^Herald is running \(API and dispatcher: it accepts events and delivers them\) on the embedded database/m);
      assert.ok(herald.url, 'an API address');
      assert.match(herald.stderr(), /^First steps:$/m);
      assert.ok(herald.stderr().trimEnd().endsWith(READY_LINE), 'the ready line comes last');
    } finally {
      herald.child.kill('SIGTERM');
      assert.equal(await herald.exited, 0);
    }
  });

  test('--role worker: no API address and no first steps, which do not apply to it', async () => {
    const herald = await startHeraldProcess(['--role', 'worker', '--data-dir', tempDir()], {});
    try {
      assert.match(herald.stderr(), /^Herald is running \(worker only: it delivers events; it serves no API/m);
      assert.equal(herald.url, undefined);
      assert.doesNotMatch(herald.stderr(), /API:|Control panel|First steps|First run/);
      assert.ok(herald.stderr().trimEnd().endsWith(READY_LINE), 'the ready line comes last');
    } finally {
      herald.child.kill('SIGTERM');
      assert.equal(await herald.exited, 0);
    }
  });

  test('--role api: the API and first steps, and that workers deliver, not this process', async () => {
    const herald = await startHeraldProcess(['--role', 'api', '--port', '0', '--data-dir', tempDir()], {});
    try {
      assert.match(herald.stderr(), /^Herald is running \(API only: it accepts events and serves the control panel; processes started with --role worker deliver them\)/m);
      assert.doesNotMatch(herald.stderr(), /and delivers them/);
      assert.ok(herald.url);
      assert.match(herald.stderr(), /^First steps:$/m);
    } finally {
      herald.child.kill('SIGTERM');
      assert.equal(await herald.exited, 0);
    }
  });
});

describe('herald --version and usage errors', () => {
  test('--version and -V print the version of package.json', async () => {
    const { version } = JSON.parse(readFileSync(join(SERVER_DIR, 'package.json'), 'utf8')) as { version: string };
    for (const flag of ['--version', '-V']) {
      const res = await runCli([flag]);
      assert.equal(res.code, 0, res.stderr);
      assert.equal(res.stdout, `${version}\n`);
    }
  });

  test('the version is found from a built dist/cli/ as well as from src/cli/', () => {
    const root = tempDir();
    mkdirSync(join(root, 'dist', 'cli'), { recursive: true });
    writeFileSync(join(root, 'package.json'), JSON.stringify({ name: '@herald/server', version: '9.8.7' }));
    // A package.json of another package on the way up is passed over.
    writeFileSync(join(root, 'dist', 'package.json'), JSON.stringify({ type: 'module' }));
    assert.equal(heraldVersion(pathToFileURL(join(root, 'dist', 'cli', 'index.js')).href), '9.8.7');
  });

  test('an unknown option: exit 2, with the same prefix as every other error', async () => {
    const res = await runCli(['--no-such-option']);
    assert.equal(res.code, 2);
    assert.match(res.stderr, /^herald: unknown option '--no-such-option'$/m);
  });
});
