import { join } from 'node:path';
import { buildStates, ROOT } from '../../../../scripts/builds.mjs';

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
  for (const { dir, state } of buildStates()) {
    if (state === 'missing') throw new Error(`${dir} is not built: run "npm run build" at the repository root (npm test builds first).`);
    if (state === 'stale') throw new Error(`${dir}/dist is older than its sources: run "npm run build" at the repository root (npm test builds first).`);
  }
  checked = true;
}

/** The compiled CLI (packages/server/dist/cli/index.js), checked to be current. */
export function builtCli(): string {
  assertBuilt();
  return join(ROOT, 'packages', 'server', 'dist', 'cli', 'index.js');
}
