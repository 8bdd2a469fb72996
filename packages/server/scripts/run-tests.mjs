#!/usr/bin/env node
// Runs every test/*.test.ts with node:test, in two passes:
//
//   1. the files that keep to their own state (temporary directories, port 0,
//      databases named after their process), HERALD_TEST_CONCURRENCY at a time
//      (default 2: these tests start servers and databases, not just code);
//   2. the files in SERIAL, one at a time, after the others: each starts many
//      real processes or a PostgreSQL cluster of its own, or holds real
//      leases and deadlines on the wall clock, and would slow or starve
//      whatever ran beside it (or miss its own deadlines beside it).
//
//   node scripts/run-tests.mjs [test/x.test.ts ...]   (default: all files)
//
// Files come from the test folder itself, so a new test file runs without
// being listed anywhere. The spawned Herald processes run the built
// JavaScript (test/helpers/built.ts); `npm test` at the root builds first.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const SERIAL = [
  'test/database-connection-loss.test.ts',
  'test/database-outage.test.ts',
  'test/dispatcher-processes.test.ts',
  'test/engine-worker.test.ts',
  'test/npm-start.test.ts',
  'test/panel-browser.test.ts',
  'test/panel-endpoint-fields-browser.test.ts',
  'test/panel-events-browser.test.ts',
  'test/panel-portal-browser.test.ts',
  'test/panel-signing-browser.test.ts',
  'test/panel-finish-browser.test.ts',
  'test/production-install.test.ts',
  'test/shutdown-readiness.test.ts',
  'test/startup-errors.test.ts',
  'test/worker-crash-loop.test.ts',
];

const packageDir = dirname(dirname(fileURLToPath(import.meta.url)));
process.chdir(packageDir);
const missing = SERIAL.filter((f) => !existsSync(f));
if (missing.length) {
  console.error(`scripts/run-tests.mjs lists files that do not exist: ${missing.join(', ')}`);
  process.exit(1);
}

const onDisk = readdirSync('test')
  .filter((name) => name.endsWith('.test.ts'))
  .sort()
  .map((name) => `test/${name}`);
const chosen = process.argv.length > 2 ? process.argv.slice(2) : onDisk;
const concurrency = Number(process.env.HERALD_TEST_CONCURRENCY ?? 2);
const passes = [
  { files: chosen.filter((f) => !SERIAL.includes(f)), concurrency },
  { files: chosen.filter((f) => SERIAL.includes(f)), concurrency: 1 },
];

let failed = false;
for (const pass of passes) {
  if (!pass.files.length) continue;
  console.log(`\n# ${pass.files.length} test file${pass.files.length === 1 ? '' : 's'}, ${pass.concurrency} at a time`);
  const args = ['--conditions=source', '--import', 'tsx', '--test', `--test-concurrency=${pass.concurrency}`, ...pass.files];
  const result = spawnSync(process.execPath, args, { stdio: 'inherit' });
  if (result.status !== 0) failed = true;
}
const ran = passes.reduce((n, p) => n + p.files.length, 0);
console.log(`\n# ran ${ran} test file${ran === 1 ? '' : 's'}${chosen === onDisk ? ` (all ${onDisk.length} in test/)` : ''}${failed ? '; some failed' : ''}`);
process.exit(failed ? 1 : 0);
