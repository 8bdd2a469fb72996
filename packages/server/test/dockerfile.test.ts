import { strict as assert } from 'node:assert';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';
import { loadConfig } from '../src/config.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const read = (file: string) => readFileSync(`${ROOT}${file}`, 'utf8');

/** The Dockerfile's instructions, one per entry, continuation lines joined and comments dropped. */
function instructions(dockerfile: string): Array<{ op: string; args: string }> {
  return dockerfile
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'))
    .map((line) => {
      const [op, ...rest] = line.split(/\s+/);
      return { op: op!.toUpperCase(), args: rest.join(' ') };
    });
}

// No container daemon runs where the tests do, so the image is not built here.
// production-install.test.ts runs scripts/build-release.sh and starts its
// release/; this checks that the Dockerfile builds with that same script and
// runs what it made, in the way the rest of Herald expects.
describe('Dockerfile', () => {
  const all = instructions(read('Dockerfile'));
  const stages = all.reduce<Array<typeof all>>((acc, i) => (i.op === 'FROM' ? [...acc, [i]] : (acc.at(-1)!.push(i), acc)), []);
  const [build, runtime] = [stages[0]!, stages.at(-1)!];

  test('has a build stage and a runtime stage, both on node:20-bookworm-slim', () => {
    assert.equal(stages.length, 2);
    for (const stage of stages) assert.match(stage[0]!.args, /^node:20-bookworm-slim\b/);
  });

  test('the build stage runs scripts/build-release.sh, the script the production install test runs', () => {
    assert.ok(build.some((i) => i.op === 'RUN' && i.args === 'bash scripts/build-release.sh'));
    assert.match(read('scripts/build-release.sh'), /^cp -a .*\brelease\//m, 'the script gathers release/');
  });

  test('the runtime stage copies release/ only and starts its herald as a non-root user', () => {
    const copies = runtime.filter((i) => i.op === 'COPY');
    assert.deepEqual(copies.map((c) => c.args), ['--from=build /herald/release /herald']);
    const user = runtime.find((i) => i.op === 'USER');
    assert.ok(user && !['root', '0'].includes(user.args), 'runs as a non-root user');
    assert.equal(runtime.find((i) => i.op === 'ENTRYPOINT')?.args, '["/herald/node_modules/.bin/herald"]');
    assert.equal(runtime.find((i) => i.op === 'CMD')?.args, '["start"]');
  });

  test("its settings are Herald's: it listens on every interface at the exposed port and keeps the embedded database in the volume", () => {
    const env: Record<string, string> = {};
    for (const i of runtime.filter((i) => i.op === 'ENV')) {
      for (const [, name, value] of i.args.matchAll(/(\w+)=(\S+)/g)) env[name!] = value!;
    }
    const config = loadConfig({ env });
    assert.equal(config.host, '0.0.0.0');
    assert.equal(runtime.find((i) => i.op === 'EXPOSE')?.args, String(config.port));
    assert.equal(runtime.find((i) => i.op === 'VOLUME')?.args, config.dataDir);
  });

  test('the health check asks /readyz with node (the slim image has no curl)', () => {
    const check = runtime.find((i) => i.op === 'HEALTHCHECK');
    assert.match(check?.args ?? '', /CMD \["node", "-e", ".*\/readyz/);
  });

  test('.dockerignore keeps installed and built folders out of the build context', () => {
    const ignored = read('.dockerignore').split('\n');
    for (const entry of ['**/node_modules', '**/dist', 'release', '.git']) assert.ok(ignored.includes(entry), entry);
  });
});
