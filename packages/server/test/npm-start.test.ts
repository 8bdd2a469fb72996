import { strict as assert } from 'node:assert';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';
import { READY_LINE } from '../src/cli/banner.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

// A service manager (systemd, Docker, Kubernetes) stops a service with
// SIGTERM to the process it started. With `npm start`, that process is npm,
// and Herald sits below npm and a shell or two: unless every layer hands the
// signal down, Herald never hears it, keeps running orphaned with its
// deliveries and its data-directory lock, and is killed without grace later.
describe('npm start', () => {
  test('SIGTERM to npm reaches Herald: it stops gracefully and no process is left behind', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'herald-npm-start-'));
    try {
      const npm = spawn('npm', ['start', '--silent'], {
        cwd: ROOT,
        env: { ...process.env, HERALD_DATA_DIR: dataDir, HERALD_PORT: '0', HERALD_HOST: '127.0.0.1', HERALD_LOG_LEVEL: 'warn' },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let err = '';
      const exited = new Promise<number | string>((resolve) => npm.on('exit', (code, signal) => resolve(code ?? signal ?? -1)));
      await new Promise<void>((resolve, reject) => {
        npm.stderr!.on('data', (chunk: Buffer) => {
          err += chunk.toString();
          if (err.includes(READY_LINE)) resolve();
        });
        void exited.then((code) => reject(new Error(`npm start exited (${code}) before Herald was ready:\n${err}`)));
      });
      const herald = JSON.parse(readFileSync(join(dataDir, 'herald.lock'), 'utf8')) as { pid: number };
      assert.notEqual(herald.pid, npm.pid, 'Herald runs below npm');

      npm.kill('SIGTERM');
      const code = await exited;
      assert.equal(code, 0, `npm start should exit 0 after a graceful stop:\n${err}`);
      assert.match(err, /SIGTERM: finishing in-flight deliveries, then stopping/);
      assert.equal(isRunning(herald.pid), false, 'the Herald process ended with npm');
      assert.equal(existsSync(join(dataDir, 'herald.lock')), false, 'the data-directory lock was released');
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
