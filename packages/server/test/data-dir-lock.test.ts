import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { acquireDataDirLock, DataDirLockedError, readLockHolder } from '../src/storage/data-dir-lock.ts';
import { openStorage } from '../src/storage/open.ts';
import { cleanEnv, runCli, startHerald } from './helpers/cli.ts';

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'herald-lock-'));
  dirs.push(dir);
  return dir;
}
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** The pid of a process that has certainly exited. */
function deadPid(): number {
  const { pid } = spawnSync(process.execPath, ['-e', '']);
  assert.ok(pid);
  return pid;
}

describe('the data-directory lock', () => {
  test('a second acquire of a held directory is refused, naming the holder and what to do', () => {
    const dir = tempDir();
    const lock = acquireDataDirLock(dir);
    try {
      assert.throws(
        () => acquireDataDirLock(dir),
        (err: unknown) => {
          assert.ok(err instanceof DataDirLockedError);
          assert.equal(err.holder.pid, process.pid);
          assert.match(err.message, new RegExp(`${dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is in use by Herald process ${process.pid}`));
          assert.match(err.message, /--data-dir/);
          assert.match(err.message, /DATABASE_URL/);
          return true;
        },
      );
    } finally {
      lock.release();
    }
    assert.ok(!existsSync(lock.path), 'release removes the lock file');
    acquireDataDirLock(dir).release();
  });

  test('the lock file names its holder and is private', () => {
    const dir = tempDir();
    const lock = acquireDataDirLock(dir);
    try {
      const holder = JSON.parse(readFileSync(lock.path, 'utf8'));
      assert.equal(holder.pid, process.pid);
      assert.equal(holder.host, hostname());
      assert.ok(!Number.isNaN(Date.parse(holder.started_at)));
      assert.deepEqual(readLockHolder(dir), holder);
      assert.equal(statSync(lock.path).mode & 0o777, 0o600);
    } finally {
      lock.release();
    }
  });

  test('a lock left by a process that no longer runs is taken over at once', () => {
    const dir = tempDir();
    const pid = deadPid();
    writeFileSync(join(dir, 'herald.lock'), JSON.stringify({ pid, host: hostname(), started_at: '2026-01-01T00:00:00.000Z' }));
    assert.equal(readLockHolder(dir), undefined, 'a dead holder is no holder');
    const lock = acquireDataDirLock(dir);
    try {
      assert.equal(JSON.parse(readFileSync(lock.path, 'utf8')).pid, process.pid);
    } finally {
      lock.release();
    }
  });

  test('a torn lock file (a crash while writing it) is taken over', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'herald.lock'), '{"pid": 12');
    const lock = acquireDataDirLock(dir);
    lock.release();
  });

  test('a lock held from another host is respected: it cannot be checked from here', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'herald.lock'), JSON.stringify({ pid: deadPid(), host: `not-${hostname()}`, started_at: '2026-01-01T00:00:00.000Z' }));
    assert.throws(() => acquireDataDirLock(dir), DataDirLockedError);
  });

  test("release leaves a lock that another process has since taken", () => {
    const dir = tempDir();
    const lock = acquireDataDirLock(dir);
    const theirs = JSON.stringify({ pid: process.ppid, host: hostname(), started_at: '2026-01-01T00:00:00.000Z' });
    writeFileSync(lock.path, theirs);
    lock.release();
    assert.equal(readFileSync(lock.path, 'utf8'), theirs);
  });

  test('the embedded storage takes the lock: a second open of the directory is refused until the first closes', async () => {
    const dir = tempDir();
    const first = await openStorage({ dataDir: dir, databaseUrl: undefined, encryptionKey: undefined });
    try {
      await assert.rejects(openStorage({ dataDir: dir, databaseUrl: undefined, encryptionKey: undefined }), DataDirLockedError);
      assert.equal((await first.db.query<{ one: number }>('SELECT 1 AS one')).rows[0]!.one, 1, 'the holder is unaffected');
      const key = join(dir, 'encryption.key');
      assert.equal(readFileSync(key, 'utf8').trim().length, 44, 'the embedded operator key was generated');
      assert.equal(statSync(key).mode & 0o777, 0o600);
    } finally {
      await first.close();
    }
    assert.ok(!existsSync(join(dir, 'herald.lock')));
  });
});

describe('two Herald processes on one data directory', () => {
  test('the second exits non-zero with the "in use" message; the first keeps running', async () => {
    const dir = tempDir();
    const first = await startHerald(['--data-dir', dir]);
    try {
      const second = await runCli(['start', '--port', '0', '--data-dir', dir], cleanEnv());
      assert.equal(second.code, 4, 'the data directory is in use: exit code 4');
      assert.match(second.stderr, /herald: the data directory .* is in use by Herald process \d+/);
      assert.match(second.stderr, new RegExp(`process ${first.child.pid}`));
      assert.ok(!second.stderr.includes('unexpected error'), second.stderr);

      const migrate = await runCli(['migrate', '--data-dir', dir]);
      assert.equal(migrate.code, 4, 'migrate is refused too');
      assert.match(migrate.stderr, /is in use by Herald process/);

      const health = await fetch(`${first.url}/healthz`);
      assert.equal(health.status, 200);
    } finally {
      assert.equal(await first.stop(), 0, 'SIGTERM stops it cleanly');
    }
    assert.ok(!existsSync(join(dir, 'herald.lock')), 'the lock is released on shutdown');
    assert.ok(!existsSync(join(dir, 'herald.sock')), 'and the admin socket removed');

    const after = await runCli(['migrate', '--data-dir', dir]);
    assert.equal(after.code, 0, after.stderr);
    assert.match(after.stdout, /schema is up to date/);
  });

  test('a Herald killed without cleanup leaves a stale lock that the next start takes over', async () => {
    const dir = tempDir();
    const first = await startHerald(['--data-dir', dir]);
    first.child.kill('SIGKILL');
    await new Promise((resolve) => first.child.once('exit', resolve));
    assert.ok(existsSync(join(dir, 'herald.lock')), 'SIGKILL left the lock behind');
    const second = await startHerald(['--data-dir', dir]);
    try {
      assert.equal((await fetch(`${second.url}/healthz`)).status, 200);
    } finally {
      assert.equal(await second.stop(), 0);
    }
  });
});

