// What each of Herald's TypeScript packages builds from, and whether its build
// is current: read by scripts/ensure-built.mjs (which rebuilds) and by the
// server's test helpers (which refuse to spawn an old build).
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));

// Each package's build writes `stamp` last; it is current when no input is newer.
export const BUILDS = [
  { dir: 'packages/verify', stamp: 'dist/cjs/package.json', inputs: ['src', 'package.json', 'tsconfig.build.json', 'tsconfig.build-cjs.json', 'scripts/build.mjs'] },
  { dir: 'packages/server', stamp: 'dist/BUILT', inputs: ['src', 'package.json', 'tsconfig.build.json', 'scripts/build.mjs'] },
];

function newest(path) {
  if (!existsSync(path)) return 0;
  const s = statSync(path);
  if (!s.isDirectory()) return s.mtimeMs;
  return Math.max(s.mtimeMs, ...readdirSync(path).map((name) => newest(join(path, name))));
}

/** Each package's build: `missing` (never built), `stale` (older than an input) or `current`. */
export function buildStates() {
  return BUILDS.map(({ dir, stamp, inputs }) => {
    const stampPath = join(ROOT, dir, stamp);
    if (!existsSync(stampPath)) return { dir, state: 'missing' };
    const builtAt = statSync(stampPath).mtimeMs;
    return { dir, state: inputs.some((p) => newest(join(ROOT, dir, p)) > builtAt) ? 'stale' : 'current' };
  });
}
