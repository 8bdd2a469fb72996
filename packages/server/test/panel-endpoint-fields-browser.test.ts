import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { panelDistDir } from '@herald/panel';
import type { Page } from 'playwright-core';
import { createApiKey } from '../src/services/accounts.ts';
import { fetchJson, openBrowser, screenshot, unlabelledControls, type TestBrowser } from './helpers/browser.ts';
import { ENGINES } from './helpers/engines.ts';
import { createTestHerald, type TestHerald } from './helpers/herald.ts';
import { opensslSignature } from './helpers/independent-hmac.ts';
import { startReceiver, type Receiver } from './helpers/receiver.ts';

/**
 * An endpoint's custom headers, metadata and the list's search, in the
 * control panel, in a real browser against a real listening Herald. Nothing
 * here sleeps: every wait is on a condition of the page.
 */

before(() => {
  execFileSync(process.execPath, [fileURLToPath(new URL('../../panel/scripts/ensure-built.mjs', import.meta.url))], { stdio: 'inherit' });
});

const TOKEN = 'gw_live_7Hq2xP9mK4vR8sT1';

for (const engine of ENGINES) {
  describe(`custom headers, metadata and search in the panel [${engine}]`, () => {
    let h: TestHerald;
    let origin: string;
    let receiver: Receiver;
    let browser: TestBrowser;
    let page: Page;
    let apiKey: string;
    let secret: string;

    before(async () => {
      h = await createTestHerald(engine, { panel: { root: panelDistDir } });
      h.clock.set(new Date());
      origin = await h.app.listen({ host: '127.0.0.1', port: 0 });
      receiver = await startReceiver();
      browser = await openBrowser();
      page = browser.page;
      // First-run setup from the page, so the browser holds the session.
      await page.goto(`${origin}/sign-in`);
      const status = await page.evaluate(
        `fetch('/v1/setup', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(${JSON.stringify({
          account_name: 'Acme Logistics',
          name: 'Ada',
          email: 'ada@acme.example',
          password: 'correct horse battery staple',
          setup_token: h.setupToken.value,
        })}) }).then((r) => r.status)`,
      );
      assert.equal(status, 201);
      const session = await fetchJson<{ account: { id: string } }>(page, '/v1/session');
      apiKey = (await createApiKey(h.db, session.account.id)).key;
    });
    after(async () => {
      await browser?.close();
      await receiver?.close();
      await h?.close();
    });

    const heading = (name: string | RegExp) => page.getByRole('heading', { name, level: 1 });
    /** Waits until the endpoint list shows exactly `n` rows. */
    const rowsAre = async (n: number) => {
      const rows = page.getByTestId('endpoint-row');
      await rows.nth(n).waitFor({ state: 'detached' });
      await rows.nth(n - 1).waitFor();
    };

    test('add an endpoint with a plain and a secret header and metadata; the detail shows the secret masked only', async () => {
      await page.goto(`${origin}/`);
      await heading('Webhooks').waitFor();
      await page.getByTestId('add-endpoint').first().click();
      await heading('Add an endpoint').waitFor();
      await page.getByLabel('Endpoint URL').fill(receiver.url);
      await page.getByLabel('Description').fill('Gateway in front of the order service');
      await page.getByLabel('alarm.created').check();

      await page.getByTestId('add-header').click();
      await page.getByLabel('Header 1 name').fill('X-Tenant');
      await page.getByLabel('Header 1 value').fill('acme');
      await page.getByTestId('add-header').click();
      await page.getByLabel('Header 2 name').fill('X-Gateway-Key');
      await page.getByTestId('header-secret').nth(1).check();
      assert.equal(await page.getByLabel('Header 2 value').getAttribute('type'), 'password', 'a secret value is not shown as it is typed');
      await page.getByLabel('Header 2 value').fill(TOKEN);
      await page.getByTestId('add-metadata').click();
      await page.getByLabel('Metadata 1 key').fill('team');
      await page.getByLabel('Metadata 1 value').fill('orders');
      assert.deepEqual(await unlabelledControls(page), []);
      await screenshot(page, 'endpoint-headers-metadata');

      await page.getByTestId('submit-endpoint').click();
      await page.getByTestId('secret-reveal').waitFor();
      secret = await page.getByTestId('secret-value').inputValue();
      await page.getByTestId('secret-done').click();
      const headers = page.getByTestId('headers-fact');
      await headers.getByText('X-Tenant: acme').waitFor();
      await headers.getByText('gw_l… (secret)').waitFor();
      await page.getByTestId('metadata-fact').getByText('orders').waitFor();
      assert.ok(!(await page.content()).includes(TOKEN), 'the secret value is nowhere on the page');
    });

    test('a test event from the panel carries the headers, signed as always', async () => {
      receiver.requests.length = 0;
      await page.getByTestId('send-test').click();
      await page.getByTestId('test-result').getByTestId('outcome-badge').waitFor();
      const sent = receiver.requests.at(-1)!;
      assert.equal(sent.headers['x-tenant'], 'acme');
      assert.equal(sent.headers['x-gateway-key'], TOKEN);
      assert.equal(sent.headers['x-service-signature'], opensslSignature(secret, String(sent.headers['x-service-timestamp']), sent.body));
    });

    test('edit: the secret value stays unless retyped; a name Herald sets is refused at the headers, naming it', async () => {
      await page.getByRole('link', { name: 'Edit' }).first().click();
      await heading('Edit endpoint').waitFor();
      const secretValue = page.getByLabel('Header 2 value');
      assert.equal(await secretValue.inputValue(), '', 'a secret value is never filled in');
      assert.match((await secretValue.getAttribute('placeholder'))!, /^Unchanged \(gw_l…\)$/);
      await page.getByLabel('Header 1 value').fill('acme-eu');

      await page.getByTestId('add-header').click();
      await page.getByLabel('Header 3 name').fill('X-Service-Signature');
      await page.getByLabel('Header 3 value').fill('v1=forged');
      await page.getByTestId('submit-endpoint').click();
      await page.getByTestId('endpoint-headers-error').getByText(/^Header 3: X-Service-Signature is set by Herald or by HTTP itself/).waitFor();
      await page.getByRole('button', { name: 'Remove header 3' }).click();

      await page.getByTestId('submit-endpoint').click();
      await page.getByTestId('headers-fact').getByText('X-Tenant: acme-eu').waitFor();
      receiver.requests.length = 0;
      await page.getByTestId('send-test').click();
      await page.getByTestId('test-result').getByTestId('outcome-badge').waitFor();
      const sent = receiver.requests.at(-1)!;
      assert.equal(sent.headers['x-tenant'], 'acme-eu');
      assert.equal(sent.headers['x-gateway-key'], TOKEN, 'kept');
    });

    test('the list shows each description and searches URL and description as one types', async () => {
      for (const [url, description] of [
        ['https://billing.example.com/hooks', 'Invoices for finance'],
        ['https://audit.example.com/hooks', 'Audit trail'],
      ]) {
        const res = await h.api('POST', '/v1/endpoints', { url, description, event_types: ['alarm.created'] }, apiKey);
        assert.equal(res.status, 201);
      }
      await page.goto(`${origin}/`);
      await heading('Webhooks').waitFor();
      const rows = page.getByTestId('endpoint-row');
      await rows.nth(2).waitFor();
      assert.equal(await rows.count(), 3);
      await rows.filter({ hasText: 'Invoices for finance' }).waitFor();

      const search = page.getByLabel('Search endpoints');
      await search.fill('FINANCE');
      await rowsAre(1);
      await rows.first().getByText('https://billing.example.com/hooks').waitFor();
      await screenshot(page, 'endpoint-list-search');
      await search.fill('audit.example');
      await rows.first().getByText('Audit trail').waitFor();
      await rowsAre(1);
      await search.fill('nothing like this');
      await page.getByTestId('endpoints-no-match').waitFor();
      assert.equal(await page.getByTestId('endpoints-empty').count(), 0, 'not the first-run empty state');
      await search.fill('');
      await rowsAre(3);
      assert.equal(await page.getByTestId('add-endpoint').count() > 0, true);
    });
  });
}
