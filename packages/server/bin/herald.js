#!/usr/bin/env node
// Runs the compiled CLI in this very process, so a service manager's signals
// reach Herald itself and its exit code is Herald's own. `npm run build`
// writes dist/ (npm ci and npm start do it too).
import { existsSync } from 'node:fs';

const cli = new URL('../dist/cli/index.js', import.meta.url);
if (!existsSync(cli)) {
  console.error('herald: the server is not built (no dist/cli/index.js); run "npm run build" in the Herald folder.');
  process.exit(1);
}
await import(cli.href);
