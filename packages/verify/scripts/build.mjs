// Builds the publishable package: ES modules in dist/esm, CommonJS in
// dist/cjs, each with .d.ts files. The CommonJS folder gets a package.json of
// its own saying so, since the package root says "type": "module".
//
//   node scripts/build.mjs [outDir]     (default: dist)
//
// outDir lets the tests build into a temporary folder, so they work on a
// fresh clone where dist/ does not exist.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const packageDir = dirname(dirname(fileURLToPath(import.meta.url)));
const outDir = resolve(process.argv[2] ?? join(packageDir, 'dist'));
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');

rmSync(outDir, { recursive: true, force: true });
for (const [config, format] of [['tsconfig.build.json', 'esm'], ['tsconfig.build-cjs.json', 'cjs']]) {
  execFileSync(process.execPath, [tsc, '-p', join(packageDir, config), '--outDir', join(outDir, format)], {
    stdio: 'inherit',
  });
}
mkdirSync(join(outDir, 'cjs'), { recursive: true });
writeFileSync(join(outDir, 'cjs', 'package.json'), '{ "type": "commonjs" }\n');

// tsc rewrites `./x.ts` to `./x.js` in JavaScript output but leaves
// declarations alone. TypeScript 5 copes, but older compilers and other
// tools do not, so the .d.ts files get the conventional `.js` specifiers.
const RELATIVE_TS = /((?:from|import)\s*\(?\s*['"])(\.{1,2}\/[^'"]*?)\.ts(['"])/g;
for (const format of ['esm', 'cjs']) {
  for (const name of readdirSync(join(outDir, format))) {
    if (!name.endsWith('.d.ts')) continue;
    const file = join(outDir, format, name);
    writeFileSync(file, readFileSync(file, 'utf8').replace(RELATIVE_TS, '$1$2.js$3'));
  }
}
