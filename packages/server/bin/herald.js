#!/usr/bin/env node
// Runs the TypeScript CLI with tsx and the `source` export condition (so
// @herald/verify resolves to its sources without a build step). Signals are
// passed on so `herald start` shuts down gracefully.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const cli = fileURLToPath(new URL('../src/cli/index.ts', import.meta.url));
const child = spawn(process.execPath, ['--conditions=source', '--import', 'tsx', cli, ...process.argv.slice(2)], { stdio: 'inherit' });
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
