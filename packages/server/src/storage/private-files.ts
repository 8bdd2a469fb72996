import { chmodSync, lstatSync, mkdirSync, readdirSync, realpathSync } from 'node:fs';
import { join } from 'node:path';

/**
 * What Herald keeps in a data directory. Only these, and the directory
 * itself, are made private: the directory may be shared (`--data-dir .` in a
 * project, a volume other programs use too), and a file that is not Herald's
 * keeps the mode its owner gave it.
 */
export const HERALD_DATA_ENTRIES = [
  'pgdata', // the embedded database (storage/open.ts)
  'encryption.key', // storage/encryption-key.ts
  'herald.lock', // storage/data-dir-lock.ts
  'herald.sock', // the admin socket, http/admin-socket.ts
  'dev-ca', // dev/dev-ca.ts
  'listen', // herald listen's endpoint secrets, cli/listen-endpoint.ts
] as const;

/**
 * The data directory holds the whole database and the key its signing secrets
 * are encrypted under, so only the user Herald runs as may read it: the
 * directory and Herald's entries in it (HERALD_DATA_ENTRIES, everything inside
 * them) lose every group and other permission bit; the owner's bits are kept.
 *
 * A umask cannot promise that: PGlite unpacks its initial database with mode
 * 0666 and sets the modes of some files it rewrites later itself. So Herald
 * makes the directory private when it opens the database, again once PGlite
 * has created or rewritten its files, and when it closes it. Between those,
 * a file PGlite writes with a wider mode is still out of reach: no other user
 * can enter the private directory around it.
 *
 * The directory is followed if it is a symbolic link (`/var/lib/herald` →
 * `/mnt/disk/herald`): the files are in the target. Links below it are never
 * followed, since chmod would change whatever they point at.
 */
export function makeDirPrivate(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const root = realpathSync(dir);
  restrict(root, false);
  for (const name of HERALD_DATA_ENTRIES) restrict(join(root, name), true);
}

/**
 * Clears the group and other bits of `path` and, with `recursive`, of
 * everything under it. Top-down on purpose: a directory is private before its
 * entries are looked at, so no other user can swap an entry for a link
 * between the lstat and the chmod.
 */
function restrict(path: string, recursive: boolean): void {
  const stat = lstatSync(path, { throwIfNoEntry: false });
  // Not there (PGlite removes temporary files; --dev not used), or a link we do not follow.
  if (!stat || stat.isSymbolicLink()) return;
  const mode = stat.mode & 0o777;
  if (mode & 0o077) {
    try {
      chmodSync(path, stat.mode & 0o7700);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  if (!recursive || !stat.isDirectory()) return;
  let names: string[];
  try {
    names = readdirSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  for (const name of names) restrict(join(path, name), true);
}
