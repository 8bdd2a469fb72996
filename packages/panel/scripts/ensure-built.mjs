#!/usr/bin/env node
// Builds the control panel when dist/ is missing or older than its sources.
// Runs from the root `prepare` (npm ci) and `prestart` (npm start) scripts, so
// the README's two commands serve an up-to-date panel; a fresh build is
// skipped in about a millisecond.
//
// When Vite is not installed (npm ci --omit=dev) an existing build is used as
// it is, and without one Herald still starts and answers / with a page that
// says what to run. A build that fails stops here, with Vite's own message.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const panel = dirname(dirname(fileURLToPath(import.meta.url)));
const built = join(panel, 'dist', 'index.html');
const sources = ['src', 'public', 'index.html', 'vite.config.ts', 'package.json'].map((p) => join(panel, p));

function newest(path) {
  if (!existsSync(path)) return 0;
  const s = statSync(path);
  if (!s.isDirectory()) return s.mtimeMs;
  return Math.max(s.mtimeMs, ...readdirSync(path).map((name) => newest(join(path, name))));
}

const builtAt = existsSync(built) ? statSync(built).mtimeMs : 0;
if (builtAt && builtAt >= Math.max(...sources.map(newest))) process.exit(0);

let vite;
try {
  vite = join(dirname(createRequire(join(panel, 'package.json')).resolve('vite/package.json')), 'bin', 'vite.js');
} catch {
  console.warn(
    builtAt
      ? 'herald: the control panel sources changed but Vite is not installed (dev dependencies omitted?); serving the existing build.'
      : 'herald: the control panel is not built and Vite is not installed; run "npm ci" then "npm run build -w @herald/panel". Herald starts without it.',
  );
  process.exit(0);
}

console.log(`herald: building the control panel (${builtAt ? 'sources changed' : 'no build yet'})…`);
const result = spawnSync(process.execPath, [vite, 'build', '--logLevel', 'warn'], { cwd: panel, stdio: 'inherit' });
process.exit(result.status ?? 1);
