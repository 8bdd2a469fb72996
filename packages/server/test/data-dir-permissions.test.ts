import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, lstatSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
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

/** Every path under `root` (itself included) whose mode is not 0700 (directories) or 0600 (the rest). */
function notPrivate(root: string): string[] {
  const found: string[] = [];
  const walk = (path: string) => {
    const stat = lstatSync(path);
    const mode = stat.mode & 0o777;
    if (mode !== (stat.isDirectory() ? 0o700 : 0o600)) found.push(`${path} ${mode.toString(8)}`);
    if (stat.isDirectory()) for (const name of readdirSync(path)) walk(join(path, name));
  };
  walk(root);
  return found;
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
});
