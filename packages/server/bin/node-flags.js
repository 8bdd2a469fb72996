// The Node.js flags Herald runs with, shared by bin/herald.js (and so
// `npm start`) and the benchmark, which must run Herald as users do.
// - `source` and tsx: run the TypeScript sources without a build step.
// - A young generation of up to 64 MiB per semi-space (V8's default is
//   16 MiB): a busy worker allocates a few short-lived objects per request,
//   and with the default it spent 12 % of its time collecting garbage, 7 %
//   with this (BENCHMARKS.md). The space grows only under that load, so an
//   idle Herald or a one-shot command uses no more memory for it.
export const NODE_FLAGS = ['--conditions=source', '--import', 'tsx', '--max-semi-space-size=64'];
