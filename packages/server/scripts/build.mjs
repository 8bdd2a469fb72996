// Builds the server into dist/: tsc compiles src/ (rewriting the `.ts` import
// specifiers to `.js`), and the SQL migrations are copied next to the compiled
// migrate.js, which finds them relative to itself. @herald/verify must be
// built first (the root `npm run build` does both in order).
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const packageDir = dirname(dirname(fileURLToPath(import.meta.url)));
const dist = join(packageDir, 'dist');
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');

rmSync(dist, { recursive: true, force: true });
execFileSync(process.execPath, [tsc, '-p', join(packageDir, 'tsconfig.build.json')], { stdio: 'inherit' });
const migrations = join(packageDir, 'src/storage/migrations');
mkdirSync(join(dist, 'storage/migrations'), { recursive: true });
for (const name of readdirSync(migrations).filter((n) => n.endsWith('.sql'))) {
  copyFileSync(join(migrations, name), join(dist, 'storage/migrations', name));
}
// Written last: a dist/ with this file is complete. The tests compare its time
// with their sources' to tell a stale build from a fresh one.
writeFileSync(join(dist, 'BUILT'), `${new Date().toISOString()}\n`);
