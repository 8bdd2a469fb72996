#!/usr/bin/env node
// Builds whatever of Herald is missing or older than its sources: the
// @herald/verify library, the server, then the control panel. Runs from the
// root `prepare` (npm ci), `prestart` (npm start) and `pretest` (npm test)
// scripts, so a fresh clone's `npm ci && npm start` runs built JavaScript; a
// build that is up to date is skipped in a few milliseconds.
//
// `npm run build` always builds everything; this only decides whether to.
// Without TypeScript (dev dependencies omitted) an existing build is used as
// it is.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(dirname(fileURLToPath(import.meta.url)));

// Each package's build writes `stamp` last; it is fresh when no input is newer.
const packages = [
  { dir: 'packages/verify', stamp: 'dist/cjs/package.json', inputs: ['src', 'package.json', 'tsconfig.build.json', 'tsconfig.build-cjs.json', 'scripts/build.mjs'] },
  { dir: 'packages/server', stamp: 'dist/BUILT', inputs: ['src', 'package.json', 'tsconfig.build.json', 'scripts/build.mjs'] },
];

function newest(path) {
  if (!existsSync(path)) return 0;
  const s = statSync(path);
  if (!s.isDirectory()) return s.mtimeMs;
  return Math.max(s.mtimeMs, ...readdirSync(path).map((name) => newest(join(path, name))));
}

function hasTypeScript() {
  try {
    createRequire(join(root, 'package.json')).resolve('typescript/bin/tsc');
    return true;
  } catch {
    return false;
  }
}

for (const { dir, stamp, inputs } of packages) {
  const stampPath = join(root, dir, stamp);
  const builtAt = existsSync(stampPath) ? statSync(stampPath).mtimeMs : 0;
  if (builtAt && builtAt >= Math.max(...inputs.map((p) => newest(join(root, dir, p))))) continue;
  if (!hasTypeScript()) {
    console.warn(`herald: ${dir} is ${builtAt ? 'older than its sources' : 'not built'} and TypeScript is not installed (dev dependencies omitted?)${builtAt ? '; using the existing build' : '; run "npm ci" then "npm run build"'}.`);
    continue;
  }
  console.log(`herald: building ${dir} (${builtAt ? 'sources changed' : 'no build yet'})…`);
  const result = spawnSync(process.execPath, [join(root, dir, 'scripts/build.mjs')], { cwd: join(root, dir), stdio: 'inherit' });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

const panel = spawnSync(process.execPath, [join(root, 'packages/panel/scripts/ensure-built.mjs')], { stdio: 'inherit' });
process.exit(panel.status ?? 1);
