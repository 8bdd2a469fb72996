import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The published artefacts, as a customer gets them: build with the package's
 * own build script into a temporary node_modules/@herald/verify (so this
 * works on a fresh clone, where dist/ does not exist), then load it by
 * package name from plain Node without the `source` condition, as ES module
 * and as CommonJS, and typecheck consumers of both against the .d.ts files.
 */

const packageDir = fileURLToPath(new URL('..', import.meta.url));
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
let root: string;
let installed: string;

// A child process that resolves exports like a customer's Node does: no
// --conditions=source, no tsx loader.
function runNode(file: string): string {
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  return execFileSync(process.execPath, [file], { cwd: root, env, encoding: 'utf8' });
}

before(() => {
  root = mkdtempSync(join(tmpdir(), 'herald-verify-build-'));
  installed = join(root, 'node_modules', '@herald', 'verify');
  mkdirSync(installed, { recursive: true });
  writeFileSync(join(installed, 'package.json'), readFileSync(join(packageDir, 'package.json')));
  execFileSync(process.execPath, [join(packageDir, 'scripts', 'build.mjs'), join(installed, 'dist')], { stdio: 'pipe' });
  writeFileSync(join(root, 'vectors.json'), readFileSync(new URL('./vectors.json', import.meta.url)));
});

after(() => rmSync(root, { recursive: true, force: true }));

test('every file the exports map points at (except source) was built', () => {
  const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as {
    exports: Record<string, string | Record<string, string | Record<string, string>>>;
    main: string;
    module: string;
    types: string;
  };
  const targets = [manifest.main, manifest.module, manifest.types];
  for (const entry of Object.values(manifest.exports)) {
    if (typeof entry === 'string') continue;
    assert.equal(Object.keys(entry)[0], 'source', 'the source condition must come first');
    for (const [condition, target] of Object.entries(entry)) {
      if (condition === 'source') continue;
      targets.push(...(typeof target === 'string' ? [target] : Object.values(target)));
    }
  }
  for (const target of targets) assert.ok(existsSync(join(installed, target)), `missing ${target}`);
  assert.equal(readFileSync(join(installed, 'dist', 'cjs', 'package.json'), 'utf8').trim(), '{ "type": "commonjs" }');
});

test('declarations use .js specifiers, never .ts', () => {
  for (const format of ['esm', 'cjs']) {
    for (const name of readdirSync(join(installed, 'dist', format)).filter((n) => n.endsWith('.d.ts'))) {
      assert.doesNotMatch(readFileSync(join(installed, 'dist', format, name), 'utf8'), /from ['"]\.[^'"]*\.ts['"]/, `${format}/${name}`);
    }
  }
});

test('the main entry imports nothing from node:, so it runs on Workers, Deno, Bun and browsers', () => {
  const seen = new Set<string>();
  const visit = (file: string): void => {
    if (seen.has(file)) return;
    seen.add(file);
    const source = readFileSync(join(installed, 'dist', 'esm', file), 'utf8');
    for (const [, specifier] of source.matchAll(/^(?:import|export)[^'"]*from ['"]([^'"]+)['"]/gm)) {
      assert.ok(specifier!.startsWith('./'), `${file} imports ${specifier}`);
      visit(specifier!.slice(2));
    }
  };
  visit('index.js');
  assert.ok(seen.has('verify.js') && !seen.has('hmac-node.js'), [...seen].join(', '));
});

// The same checks, once through import and once through require.
const CHECKS = `
  const [vector] = JSON.parse(readFileSync(new URL('./vectors.json', 'file://' + process.cwd() + '/'), 'utf8')).vectors;
  const body = Buffer.from(vector.body_base64, 'base64');
  const results = {};
  results.sign = await main.sign({ body, secret: vector.secret, timestamp: vector.timestamp }) === vector.signature;
  results.signSync = node.signSync({ body, secret: vector.secret, timestamp: vector.timestamp }) === vector.signature;
  const headers = { 'x-service-timestamp': String(vector.timestamp), 'x-service-signature': vector.signature };
  results.verify = (await main.verify({ body, headers, secret: vector.secret, now: vector.timestamp })).type;
  results.verifySync = node.verifySync({ body, headers, secret: vector.secret, now: vector.timestamp }).type;
  const request = await main.createTestRequest({ secret: 's', type: 'shipment.created', data: { id: 1 } });
  results.testRequest = (await node.verify({ ...request, secret: 's' })).type;
  try {
    node.verifySync({ body, headers, secret: 'wrong', now: vector.timestamp });
  } catch (error) {
    results.errorCode = error.code;
    // Thrown by one build, checked against the other build's class.
    results.instanceofOtherBuild = error instanceof other.WebhookVerificationError;
  }
  results.exports = Object.keys(node).sort();
  process.stdout.write(JSON.stringify(results));
`;

function expectWorking(output: string): string[] {
  const results = JSON.parse(output) as Record<string, unknown>;
  const { exports, ...rest } = results;
  assert.deepEqual(rest, {
    sign: true,
    signSync: true,
    verify: 'alarm.created',
    verifySync: 'alarm.created',
    testRequest: 'shipment.created',
    errorCode: 'no_matching_signature',
    instanceofOtherBuild: true,
  });
  return exports as string[];
}

test('the ES module build loads by package name and works', () => {
  writeFileSync(
    join(root, 'check.mjs'),
    `import { readFileSync } from 'node:fs';
     import { createRequire } from 'node:module';
     import * as main from '@herald/verify';
     import * as node from '@herald/verify/node';
     const other = createRequire(import.meta.url)('@herald/verify');
     ${CHECKS}`,
  );
  const esmExports = expectWorking(runNode(join(root, 'check.mjs')));
  writeFileSync(
    join(root, 'check.cjs'),
    `const { readFileSync } = require('node:fs');
     const main = require('@herald/verify');
     const node = require('@herald/verify/node');
     (async () => {
       const other = await import('@herald/verify');
       ${CHECKS}
     })().catch((error) => { console.error(error); process.exit(1); });`,
  );
  const cjsExports = expectWorking(runNode(join(root, 'check.cjs')));
  assert.deepEqual(cjsExports, esmExports, 'both builds export the same names');
  for (const name of ['verify', 'verifySync', 'sign', 'signSync', 'createTestRequest', 'WebhookVerificationError', 'MemoryIdempotencyStore', 'isKnownEvent', 'HEADER']) {
    assert.ok(esmExports.includes(name), name);
  }
});

test('the declarations typecheck for ESM and CommonJS consumers, with no DOM or Node types', () => {
  const consumer = `
    import { createTestRequest, isKnownEvent, MemoryIdempotencyStore, verify, WebhookVerificationError, type VerificationErrorCode } from '@herald/verify';
    import { verifySync } from '@herald/verify/node';
    export async function handle(body: string, headers: Record<string, string | string[] | undefined>): Promise<number> {
      try {
        const event = await verify({ body, headers, secrets: ['whsec_new', 'whsec_old'], now: new Date() });
        if (!isKnownEvent(event)) return 204;
        if (event.type === 'alarm.created') { const severity: string = event.data.severity; void severity; }
        void verifySync({ body, headers: { get: () => null }, secret: 'whsec_x' });
        void new MemoryIdempotencyStore({ max: 10 }).seen(event.id);
        void createTestRequest({ secret: 's', type: 'shipment.created', data: { id: 1 } });
        return 204;
      } catch (error) {
        if (error instanceof WebhookVerificationError) { const code: VerificationErrorCode = error.code; void code; return error.status; }
        throw error;
      }
    }
  `;
  writeFileSync(join(root, 'consumer.mts'), consumer);
  writeFileSync(join(root, 'consumer.cts'), consumer);
  writeFileSync(
    join(root, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', lib: ['ES2022'], types: [],
        strict: true, noEmit: true, skipLibCheck: false,
      },
      files: ['consumer.mts', 'consumer.cts'],
    }),
  );
  execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.json')], { cwd: root, stdio: 'pipe' });
});
