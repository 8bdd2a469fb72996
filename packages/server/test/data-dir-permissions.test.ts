import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStorage } from '../src/storage/open.ts';
import { cleanEnv, runCli, startHerald } from './helpers/cli.ts';

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'herald-perms-'));
  dirs.push(dir);
  return dir;
}

// What most systems have: files 0644 and directories 0755 unless told otherwise.
let umask: number;
before(() => {
  umask = process.umask(0o022);
});
after(() => {
  process.umask(umask);
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** Every path under `root` (itself included; a link followed there only) that is not 0700 (directories) or 0600 (the rest). */
function notPrivate(root: string): string[] {
  const found: string[] = [];
  const walk = (path: string, follow: boolean) => {
    const stat = follow ? statSync(path) : lstatSync(path);
    const mode = stat.mode & 0o777;
    if (mode !== (stat.isDirectory() ? 0o700 : 0o600)) found.push(`${path} ${mode.toString(8)}`);
    if (stat.isDirectory()) for (const name of readdirSync(path)) walk(join(path, name), false);
  };
  walk(root, true);
  return found;
}

function modeOf(path: string): string {
  return (lstatSync(path).mode & 0o777).toString(8);
}

function countPaths(root: string): number {
  return 1 + (lstatSync(root).isDirectory() ? readdirSync(root).reduce((n, name) => n + countPaths(join(root, name)), 0) : 0);
}

describe('the data directory is private to the user Herald runs as', () => {
  test('a new install under umask 022: the directory 0700, every file in it 0600, while running and after', async () => {
    const dir = join(tempDir(), 'data');
    const herald = await startHerald(['--data-dir', dir], cleanEnv());
    try {
      // Data written through the running Herald (the admin socket), so PGlite writes files.
      for (let i = 0; i < 3; i++) {
        const res = await runCli(['accounts', 'create', '--name', `Acme ${i}`, '--data-dir', dir]);
        assert.equal(res.code, 0, res.stderr);
      }
      assert.ok(countPaths(dir) > 100, 'the database is there');
      assert.deepEqual(notPrivate(dir), []);
    } finally {
      assert.equal(await herald.stop(), 0);
    }
    assert.deepEqual(notPrivate(dir), []);
  });

  test('an existing directory with world-writable files is made private at start', async () => {
    const dir = tempDir();
    const storage = await openStorage({ dataDir: dir, databaseUrl: undefined, encryptionKey: undefined });
    await storage.close();
    const widen = (path: string) => {
      const stat = lstatSync(path);
      chmodSync(path, stat.isDirectory() ? 0o777 : 0o666);
      if (stat.isDirectory()) for (const name of readdirSync(path)) widen(join(path, name));
    };
    widen(dir);
    assert.ok(notPrivate(dir).some((p) => p.startsWith(join(dir, 'encryption.key'))));

    const again = await openStorage({ dataDir: dir, databaseUrl: undefined, encryptionKey: undefined });
    try {
      assert.deepEqual(notPrivate(dir), [], 'the key, the lock and the database files alike');
    } finally {
      await again.close();
    }
  });

  test('a data directory reached through a symbolic link is made private where it really is', async () => {
    const target = join(tempDir(), 'disk');
    mkdirSync(target, { mode: 0o755 });
    const link = join(tempDir(), 'herald');
    symlinkSync(target, link);
    const storage = await openStorage({ dataDir: link, databaseUrl: undefined, encryptionKey: undefined });
    try {
      assert.ok(countPaths(join(target, 'pgdata')) > 100, 'the database is in the target');
      assert.deepEqual(notPrivate(target), []);
    } finally {
      await storage.close();
    }
    assert.deepEqual(notPrivate(target), []);
  });

  test("only Herald's own entries are touched: another program's files and links in the directory keep their modes", async () => {
    const dir = tempDir();
    chmodSync(dir, 0o755);
    mkdirSync(join(dir, 'bin'), { mode: 0o755 });
    writeFileSync(join(dir, 'bin', 'run.sh'), '#!/bin/sh\n', { mode: 0o755 });
    writeFileSync(join(dir, 'README'), 'shared\n', { mode: 0o644 });
    // A link inside the database pointing out of it: never followed.
    const outside = join(tempDir(), 'outside.txt');
    writeFileSync(outside, 'not Herald\'s\n', { mode: 0o644 });
    const first = await openStorage({ dataDir: dir, databaseUrl: undefined, encryptionKey: undefined });
    await first.close();
    symlinkSync(outside, join(dir, 'pgdata', 'link-out'));
    chmodSync(join(dir, 'encryption.key'), 0o644);

    const storage = await openStorage({ dataDir: dir, databaseUrl: undefined, encryptionKey: undefined });
    try {
      assert.equal(modeOf(join(dir, 'bin')), '755');
      assert.equal(modeOf(join(dir, 'bin', 'run.sh')), '755');
      assert.equal(modeOf(join(dir, 'README')), '644');
      assert.equal(modeOf(outside), '644', 'a link in pgdata is not followed');
      assert.equal(modeOf(dir), '700');
      assert.equal(modeOf(join(dir, 'encryption.key')), '600');
      assert.equal(modeOf(join(dir, 'herald.lock')), '600');
      for (const entry of ['pgdata', 'encryption.key', 'herald.lock']) {
        assert.deepEqual(
          notPrivate(join(dir, entry)).filter((p) => !p.includes('link-out')),
          [],
          entry,
        );
      }
    } finally {
      await storage.close();
    }
  });
});
