import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { loadVectors } from './vectors.ts';

/**
 * The README's install steps, as a receiver follows them: `npm pack -w
 * @herald/verify` in the checkout (its prepack script builds dist/), then
 * `npm install --offline` of that tarball, and of the package folder, into
 * new projects. The projects then import, require and type-check the package
 * with plain Node and tsc, not this repository's `source` condition.
 *
 * Every npm command gets a registry that only counts requests and an empty
 * cache, so the install demonstrably needs no network.
 */

const packageDir = fileURLToPath(new URL('..', import.meta.url));
const repoRoot = resolve(packageDir, '../..');
const manifest = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as { name: string; version: string };
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const execFileAsync = promisify(execFile);

let root: string;
let registry: Server;
const registryRequests: string[] = [];
let packed: { filename: string; files: string[] };
let tarballProject: string;
let folderProject: string;

// A child process as a receiver's shell starts it: none of the npm_* variables
// of the `npm test` that may be running this file (npm_config_local_prefix
// would make the child npm treat this repository as its project), and no
// NODE_OPTIONS carrying the source condition.
function cleanEnv(): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_/i.test(key) && key !== 'NODE_OPTIONS'));
  const { port } = registry.address() as AddressInfo;
  return { ...env, npm_config_registry: `http://127.0.0.1:${port}/`, npm_config_cache: join(root, 'npm-cache') };
}

// Asynchronous, so the counting registry keeps answering while npm runs.
async function run(cmd: string, args: string[], cwd: string): Promise<string> {
  try {
    return (await execFileAsync(cmd, args, { cwd, env: cleanEnv(), encoding: 'utf8', timeout: 45_000 })).stdout;
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    throw new Error(`${cmd} ${args.join(' ')} failed in ${cwd}:\n${stdout ?? ''}\n${stderr ?? ''}`, { cause: error });
  }
}

function newProject(name: string): string {
  const dir = join(root, name);
  mkdirSync(dir);
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name, private: true }));
  return dir;
}

before(async () => {
  root = mkdtempSync(join(tmpdir(), 'herald-verify-pack-'));
  registry = createServer((req, res) => {
    registryRequests.push(`${req.method} ${req.url}`);
    res.writeHead(503).end();
  });
  await new Promise<void>((done) => registry.listen(0, '127.0.0.1', done));

  const packDir = join(root, 'pack');
  mkdirSync(packDir);
  const [result] = JSON.parse(
    await run('npm', ['pack', '-w', manifest.name, '--pack-destination', packDir, '--json'], repoRoot),
  ) as Array<{ filename: string; files: Array<{ path: string }> }>;
  packed = { filename: result!.filename, files: result!.files.map((f) => f.path).sort() };

  // The folder install below uses the dist/ that packing just built.
  tarballProject = newProject('receiver-tarball');
  await run('npm', ['install', '--offline', '--no-audit', '--no-fund', join(packDir, packed.filename)], tarballProject);
  folderProject = newProject('receiver-folder');
  await run('npm', ['install', '--offline', '--no-audit', '--no-fund', packageDir], folderProject);
});

after(async () => {
  await new Promise((done) => registry.close(done));
  rmSync(root, { recursive: true, force: true });
});

test('the tarball holds the builds, README, LICENSE and package.json, and nothing else', () => {
  assert.equal(packed.filename, `herald-verify-${manifest.version}.tgz`);
  const builds = packed.files.filter((path) => path.startsWith('dist/'));
  assert.deepEqual(packed.files, ['LICENSE', 'README.md', ...builds, 'package.json'].sort());
  // Both formats hold the same modules, each with its declarations; the
  // CommonJS folder also has the package.json that says it is CommonJS.
  const modules = (format: string) => builds.filter((p) => p.startsWith(`dist/${format}/`)).map((p) => p.slice(`dist/${format}/`.length));
  assert.deepEqual(modules('cjs'), [...modules('esm'), 'package.json'].sort());
  const esm = modules('esm');
  assert.ok(esm.includes('index.js') && esm.includes('node.js'), esm.join(', '));
  assert.deepEqual(esm.filter((name) => !/^[a-z-]+\.(js|d\.ts)$/.test(name)), []);
  const js = esm.filter((name) => name.endsWith('.js'));
  assert.deepEqual(js.map((name) => name.replace(/\.js$/, '.d.ts')), esm.filter((name) => name.endsWith('.d.ts')));
});

test('the packed LICENSE is the repository\'s, and the package runs no install scripts', () => {
  const installed = join(tarballProject, 'node_modules', '@herald', 'verify');
  assert.equal(readFileSync(join(installed, 'LICENSE'), 'utf8'), readFileSync(join(repoRoot, 'LICENSE'), 'utf8'));
  const { scripts = {}, dependencies, peerDependencies, optionalDependencies } = JSON.parse(
    readFileSync(join(installed, 'package.json'), 'utf8'),
  ) as Record<string, Record<string, string> | undefined>;
  for (const hook of ['preinstall', 'install', 'postinstall', 'prepare']) assert.equal(scripts[hook], undefined, hook);
  assert.deepEqual({ dependencies, peerDependencies, optionalDependencies }, {
    dependencies: undefined,
    peerDependencies: undefined,
    optionalDependencies: undefined,
  });
});

test('packing and installing sent nothing to the registry', () => {
  assert.deepEqual(registryRequests, []);
});

// A known vector through every entry point, the way a receiver's code loads it.
const [vector] = loadVectors();
const CHECKS = `
  const vector = ${JSON.stringify({ ...vector, body: Buffer.from(vector!.body).toString('base64') })};
  const body = Buffer.from(vector.body, 'base64');
  const headers = { 'x-service-timestamp': String(vector.timestamp), 'x-service-signature': vector.signature };
  const results = {
    sign: await main.sign({ body, secret: vector.secret, timestamp: vector.timestamp }),
    signSync: node.signSync({ body, secret: vector.secret, timestamp: vector.timestamp }),
    verify: (await main.verify({ body, headers, secret: vector.secret, now: vector.timestamp })).type,
    verifySync: node.verifySync({ body, headers, secret: vector.secret, now: vector.timestamp }).type,
  };
  try {
    await main.verify({ body, headers, secret: vector.secret + 'x', now: vector.timestamp });
  } catch (error) {
    results.wrongSecret = error instanceof main.WebhookVerificationError && error.code;
  }
  results.resolved = resolved;
  process.stdout.write(JSON.stringify(results));
`;

function expectVectorChecked(output: string, project: string): void {
  const { resolved, ...results } = JSON.parse(output) as { resolved: string[] } & Record<string, unknown>;
  assert.deepEqual(results, {
    sign: vector!.signature,
    signSync: vector!.signature,
    verify: 'alarm.created',
    verifySync: 'alarm.created',
    wrongSecret: 'no_matching_signature',
  });
  for (const file of resolved) assert.match(file, /\/dist\/(esm|cjs)\/(index|node)\.js$/, `${relative(project, file)}`);
}

for (const [what, project] of [
  ['the tarball', () => tarballProject],
  ['the package folder', () => folderProject],
] as const) {
  test(`installed from ${what}, it imports and requires by name with plain Node and verifies a known signature`, async () => {
    const dir = project();
    writeFileSync(
      join(dir, 'check.mjs'),
      `import * as main from '@herald/verify';
       import * as node from '@herald/verify/node';
       const resolved = [import.meta.resolve('@herald/verify'), import.meta.resolve('@herald/verify/node')].map((u) => new URL(u).pathname);
       ${CHECKS}`,
    );
    writeFileSync(
      join(dir, 'check.cjs'),
      `const main = require('@herald/verify');
       const node = require('@herald/verify/node');
       const resolved = [require.resolve('@herald/verify'), require.resolve('@herald/verify/node')];
       (async () => { ${CHECKS} })().catch((error) => { console.error(error); process.exit(1); });`,
    );
    expectVectorChecked(await run(process.execPath, ['check.mjs'], dir), dir);
    expectVectorChecked(await run(process.execPath, ['check.cjs'], dir), dir);
  });
}

test('a TypeScript receiver type-checks against the installed declarations, as ES module and CommonJS', async () => {
  const consumer = `
    import { verify, WebhookVerificationError, isKnownEvent } from '@herald/verify';
    import { verifySync } from '@herald/verify/node';
    export async function status(body: Uint8Array, headers: Record<string, string | string[] | undefined>): Promise<number> {
      try {
        const event = await verify({ body, headers, secret: 'whsec_x' });
        if (isKnownEvent(event) && event.type === 'alarm.resolved') { const at: string | null = event.data.resolved_at; void at; }
        void verifySync({ body, headers, secrets: ['whsec_new', 'whsec_old'] });
        return 204;
      } catch (error) {
        if (error instanceof WebhookVerificationError) return error.status;
        throw error;
      }
    }
  `;
  writeFileSync(join(tarballProject, 'receiver.mts'), consumer);
  writeFileSync(join(tarballProject, 'receiver.cts'), consumer);
  writeFileSync(
    join(tarballProject, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', lib: ['ES2022'], types: [], strict: true, noEmit: true },
      files: ['receiver.mts', 'receiver.cts'],
    }),
  );
  await run(process.execPath, [tsc, '-p', 'tsconfig.json'], tarballProject);
});

test('the README and the receiving guide name the tarball npm pack writes', () => {
  const readme = readFileSync(join(packageDir, 'README.md'), 'utf8');
  assert.ok(readme.includes(`npm pack -w ${manifest.name}`), 'README: npm pack command');
  assert.ok(readme.includes(packed.filename), `README names ${packed.filename}`);
  const guide = readFileSync(join(repoRoot, 'docs', 'receiving-webhooks.md'), 'utf8');
  assert.ok(guide.includes(`npm pack -w ${manifest.name}`) && guide.includes(packed.filename), `the guide names ${packed.filename}`);
});

test('each README link that leaves the package also names its place in the repository', () => {
  // Without a repository URL in package.json, such links go nowhere in an
  // installed copy, so the text says where in Herald's repository to look.
  const readme = readFileSync(join(packageDir, 'README.md'), 'utf8');
  const prose = readme.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, '');
  const targets = [...prose.matchAll(/\]\((?!#|[a-z]+:)([^)#\s]+)[^)]*\)/g)].map((m) => m[1]!);
  assert.ok(targets.length > 0);
  for (const target of targets) {
    const inRepo = relative(repoRoot, resolve(packageDir, target)).replaceAll('\\', '/');
    if (packed.files.some((file) => file === target || file.startsWith(`${target.replace(/\/$/, '')}/`))) continue;
    const named = inRepo + (target.endsWith('/') ? '/' : '');
    assert.ok(prose.includes(`\`${named}\``), `${target}: write \`${named}\` next to the link`);
  }
});
