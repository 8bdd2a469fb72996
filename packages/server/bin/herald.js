#!/usr/bin/env node
// Runs the TypeScript CLI with Herald's Node.js flags (node-flags.js): tsx
// and the `source` export condition (so @herald/verify resolves to its
// sources without a build step), and the young generation's size. Signals are
// passed on so `herald start` shuts down gracefully.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { NODE_FLAGS } from './node-flags.js';

const cli = fileURLToPath(new URL('../src/cli/index.ts', import.meta.url));
const child = spawn(process.execPath, [...NODE_FLAGS, cli, ...process.argv.slice(2)], { stdio: 'inherit' });
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
