import { chmodSync, lstatSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The data directory holds the whole database and the key its signing secrets
 * are encrypted under, so only the user Herald runs as may read it: the
 * directory and every directory in it 0700, every file 0600.
 *
 * A umask cannot promise that: PGlite unpacks its initial database with mode
 * 0666 and sets the modes of some files it rewrites later itself. So Herald
 * makes the directory private when it opens the database, again once PGlite
 * has created or rewritten its files, and when it closes it. Between those,
 * a file PGlite writes with a wider mode is still out of reach: no other user
 * can enter the 0700 directory around it.
 */
export function makeDirPrivate(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  restrict(dir);
}

function restrict(path: string): void {
  const stat = lstatSync(path, { throwIfNoEntry: false });
  // Gone meanwhile (PGlite removes temporary files), or a link we do not follow.
  if (!stat || stat.isSymbolicLink()) return;
  const mode = stat.isDirectory() ? 0o700 : 0o600;
  if ((stat.mode & 0o777) !== mode) {
    try {
      chmodSync(path, mode);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  if (!stat.isDirectory()) return;
  let names: string[];
  try {
    names = readdirSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  for (const name of names) restrict(join(path, name));
}
