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
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { buildStates, ROOT as root } from './builds.mjs';

function hasTypeScript() {
  try {
    createRequire(join(root, 'package.json')).resolve('typescript/bin/tsc');
    return true;
  } catch {
    return false;
  }
}

for (const { dir, state } of buildStates()) {
  if (state === 'current') continue;
  const stale = state === 'stale';
  if (!hasTypeScript()) {
    console.warn(`herald: ${dir} is ${stale ? 'older than its sources' : 'not built'} and TypeScript is not installed (dev dependencies omitted?)${stale ? '; using the existing build' : '; run "npm ci" then "npm run build"'}.`);
    continue;
  }
  console.log(`herald: building ${dir} (${stale ? 'sources changed' : 'no build yet'})…`);
  const result = spawnSync(process.execPath, [join(root, dir, 'scripts/build.mjs')], { cwd: join(root, dir), stdio: 'inherit' });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

const panel = spawnSync(process.execPath, [join(root, 'packages/panel/scripts/ensure-built.mjs')], { stdio: 'inherit' });
process.exit(panel.status ?? 1);
