import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const PACKAGES = fileURLToPath(new URL('../../../', import.meta.url));

// What each package's build reads, and the file it writes last.
const BUILDS = [
  { dir: join(PACKAGES, 'verify'), stamp: 'dist/cjs/package.json', inputs: ['src', 'package.json', 'tsconfig.build.json', 'tsconfig.build-cjs.json', 'scripts/build.mjs'] },
  { dir: join(PACKAGES, 'server'), stamp: 'dist/BUILT', inputs: ['src', 'package.json', 'tsconfig.build.json', 'scripts/build.mjs'] },
];

function newest(path: string): number {
  if (!existsSync(path)) return 0;
  const s = statSync(path);
  if (!s.isDirectory()) return s.mtimeMs;
  return Math.max(s.mtimeMs, ...readdirSync(path).map((name) => newest(join(path, name))));
}

let checked = false;

/**
 * Throws unless @herald/verify and the server are built from their current
 * sources. Spawned processes run the compiled JavaScript with plain node (a
 * TypeScript loader in each would compile the whole server every time), so
 * an old build would test old code. `npm test` builds first; a test file run
 * on its own fails here, saying what to run. It does not build by itself:
 * test files running side by side would rebuild dist/ under one another.
 */
export function assertBuilt(): void {
  if (checked) return;
  for (const { dir, stamp, inputs } of BUILDS) {
    const name = `packages/${dir.slice(PACKAGES.length)}`;
    const stampPath = join(dir, stamp);
    if (!existsSync(stampPath)) throw new Error(`${name} is not built: run "npm run build" at the repository root (npm test builds first).`);
    if (inputs.some((p) => newest(join(dir, p)) > statSync(stampPath).mtimeMs)) {
      throw new Error(`${name}/dist is older than its sources: run "npm run build" at the repository root (npm test builds first).`);
    }
  }
  checked = true;
}

/** The compiled CLI (packages/server/dist/cli/index.js), checked to be current. */
export function builtCli(): string {
  assertBuilt();
  return join(PACKAGES, 'server', 'dist', 'cli', 'index.js');
}
