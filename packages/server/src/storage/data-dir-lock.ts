import { hostname } from 'node:os';
import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/**
 * PGlite does not lock its directory, and two processes writing one directory
 * silently lose writes. Herald holds `herald.lock` (pid and host) while it has
 * the embedded database open. A lock left by a process that no longer runs is
 * taken over at once, so a restart after a crash needs no waiting.
 */
export class DataDirLockedError extends Error {
  constructor(readonly dataDir: string, readonly holder: LockHolder) {
    super(
      `the data directory ${dataDir} is in use by Herald process ${holder.pid} (started ${holder.started_at}). ` +
        'Stop that process first, or give this one its own --data-dir. To run several processes, use PostgreSQL (DATABASE_URL).',
    );
    this.name = 'DataDirLockedError';
  }
}

export interface LockHolder {
  pid: number;
  host: string;
  started_at: string;
}

export interface DataDirLock {
  readonly path: string;
  release(): void;
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Reads the current holder, or undefined when there is no live holder. */
export function readLockHolder(dataDir: string): LockHolder | undefined {
  try {
    const holder = JSON.parse(readFileSync(join(dataDir, 'herald.lock'), 'utf8')) as LockHolder;
    // On another host (a shared directory) we cannot tell: treat it as live.
    if (holder.host !== hostname() || isRunning(holder.pid)) return holder;
  } catch {
    /* no lock file, or a torn one from a crash */
  }
  return undefined;
}

export function acquireDataDirLock(dataDir: string): DataDirLock {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const path = join(dataDir, 'herald.lock');
  const me: LockHolder = { pid: process.pid, host: hostname(), started_at: new Date().toISOString() };
  for (let tries = 0; tries < 2; tries++) {
    try {
      const fd = openSync(path, 'wx', 0o600);
      writeSync(fd, JSON.stringify(me));
      closeSync(fd);
      return {
        path,
        release() {
          try {
            const holder = JSON.parse(readFileSync(path, 'utf8')) as LockHolder;
            if (holder.pid === me.pid && holder.host === me.host) unlinkSync(path);
          } catch {
            /* already gone */
          }
        },
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const holder = readLockHolder(dataDir);
      if (holder) throw new DataDirLockedError(dataDir, holder);
      // Stale: its process is gone. Remove it and try once more; if another
      // process wins that race, the second openSync fails and we report it.
      try {
        unlinkSync(path);
      } catch {
        /* someone else removed it */
      }
    }
  }
  throw new DataDirLockedError(dataDir, readLockHolder(dataDir) ?? { pid: -1, host: '?', started_at: '?' });
}
