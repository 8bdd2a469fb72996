/**
 * `npm run bench`: Herald's own bench (run.ts), or with `--race` the race
 * against other senders (race.ts). Each reads its own options.
 */
if (process.argv.includes('--race')) await import('./race.ts');
else await import('./run.ts');
