import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { cleanEnv, runCli } from './helpers/cli.ts';
import { ENGINES } from './helpers/engines.ts';
import { createTestHerald, type TestHerald } from './helpers/herald.ts';

for (const engine of ENGINES) {
  describe(`herald portal-sessions create through a running API (${engine})`, () => {
    let h: TestHerald;
    let baseUrl: string;

    before(async () => {
      h = await createTestHerald(engine);
      baseUrl = await h.app.listen({ host: '127.0.0.1', port: 0 });
    });
    after(async () => {
      await h?.close();
    });

    const cli = (args: string[]) => runCli(args, cleanEnv({ HERALD_URL: baseUrl, HERALD_API_KEY: h.apiKey }));

    test('prints a one-time link for the key\u2019s account, with the options given', async () => {
      const res = await cli([
        'portal-sessions',
        'create',
        '--origin',
        'https://app.example.com, https://admin.example.com:8443',
        '--read-only',
        '--expires-in',
        '10',
        '--accent-color',
        '#0a7d55',
        '--hide-sign-out',
      ]);
      assert.equal(res.code, 0, res.stderr);
      assert.match(res.stdout, new RegExp(`${baseUrl}/portal/hpl_[A-Za-z0-9_-]{43}`));
      assert.match(res.stdout, /read-only/);
      assert.match(res.stdout, /https:\/\/app\.example\.com, https:\/\/admin\.example\.com:8443/);
      assert.ok(!res.stdout.includes(h.apiKey) && !res.stderr.includes(h.apiKey));

      const json = await cli(['--json', 'portal-sessions', 'create', '--origin', 'https://app.example.com', '--logo-url', 'https://cdn.example.com/l.svg']);
      assert.equal(json.code, 0, json.stderr);
      const body = JSON.parse(json.stdout);
      assert.equal(body.account_id, h.accountId);
      assert.equal(body.read_only, false);
      assert.equal(body.theme.logo_url, 'https://cdn.example.com/l.svg');
      assert.equal(body.expires_at, new Date(h.clock.now().getTime() + 5 * 60_000).toISOString());
    });

    test('a wrong origin is the API\u2019s validation problem, naming the field', async () => {
      const res = await cli(['portal-sessions', 'create', '--origin', 'https://app.example.com/settings']);
      assert.notEqual(res.code, 0);
      assert.match(res.stderr, /allowed_origins\[0\]/);
      assert.match(res.stderr, /no path/);
    });
  });
}
