import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { panelDistDir } from '@herald/panel';
import type { Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { openBrowser, screenshot, unlabelledControls, type TestBrowser } from './helpers/browser.ts';
import { ENGINES } from './helpers/engines.ts';
import { createTestHerald, type TestHerald } from './helpers/herald.ts';
import { opensslSignature } from './helpers/independent-hmac.ts';
import { startReceiver, type Receiver } from './helpers/receiver.ts';

/**
 * Signature schemes and rotation overlaps in the control panel, in a real
 * browser against a real listening Herald: choosing Standard Webhooks when
 * adding an endpoint, rotating with an overlap, ending it, and changing the
 * scheme (which shows the new secret once).
 */

before(() => {
  execFileSync(process.execPath, [fileURLToPath(new URL('../../panel/scripts/ensure-built.mjs', import.meta.url))], { stdio: 'inherit' });
});

for (const engine of ENGINES) {
  describe(`signature schemes and secret rotation in the panel [${engine}]`, () => {
    let h: TestHerald;
    let origin: string;
    let receiver: Receiver;
    let browser: TestBrowser;
    let page: Page;
    let secret: string;

    before(async () => {
      h = await createTestHerald(engine, { panel: { root: panelDistDir } });
      // The panel and the standardwebhooks library both read the system clock.
      h.clock.set(new Date());
      origin = await h.app.listen({ host: '127.0.0.1', port: 0 });
      receiver = await startReceiver();
      receiver.respond({ status: 204 });
      browser = await openBrowser();
      page = browser.page;
    });
    after(async () => {
      await browser?.close();
      await receiver?.close();
      await h?.close();
    });

    const heading = (name: string | RegExp) => page.getByRole('heading', { name, level: 1 });
    const lastRequest = async () => {
      const before = receiver.requests.length;
      await page.getByTestId('send-test').click();
      await receiver.received(before + 1);
      return receiver.requests.at(-1)!;
    };

    test('add an endpoint that signs with Standard Webhooks; its test event verifies with the standardwebhooks library', async () => {
      await page.goto(`${origin}/setup#token=${h.setupToken.value}`);
      await page.getByLabel('Account name').fill('Acme Logistics');
      await page.getByLabel('Your name').fill('Ada');
      await page.getByLabel('Email').fill('ada@acme.example');
      await page.getByLabel('Password').fill('correct horse battery staple');
      await page.getByRole('button', { name: 'Create account and sign in' }).click();
      await heading('Webhooks').waitFor();

      await page.getByTestId('add-endpoint').first().click();
      await heading('Add an endpoint').waitFor();
      await page.getByLabel('Endpoint URL').fill(receiver.url);
      await page.getByLabel('alarm.created').check();
      await page.getByTestId('scheme-standard-webhooks').check();
      assert.equal(await page.getByTestId('scheme-change-note').count(), 0, 'no warning when adding');
      assert.deepEqual(await unlabelledControls(page), []);
      await page.getByTestId('submit-endpoint').click();
      secret = await page.getByTestId('secret-value').inputValue();
      assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
      await page.getByTestId('secret-done').click();
      await page.getByTestId('scheme-fact').getByText('Standard Webhooks').waitFor();

      const sent = await lastRequest();
      assert.ok(new Webhook(secret).verify(sent.body, sent.headers as Record<string, string>));
    });

    test('rotate keeping the old secret valid for 24 hours: both secrets verify; the overlap shows and ends with "End overlap now"', async () => {
      await page.getByTestId('rotate-secret').click();
      const dialog = page.getByTestId('rotate-dialog');
      await dialog.getByTestId('strict-receiver-note').getByText('compares the whole webhook-signature header').waitFor();
      assert.equal(await dialog.getByTestId('rotate-immediately').isChecked(), true, 'immediately is the default');
      await dialog.getByTestId('rotate-overlap').check();
      await dialog.getByTestId('overlap-length').selectOption({ label: '24 hours' });
      assert.deepEqual(await unlabelledControls(page), []);
      await screenshot(page, 'rotate-dialog-overlap');
      const rotated = page.waitForRequest((r) => r.method() === 'POST' && new URL(r.url()).pathname.endsWith('/rotate-secret'));
      await dialog.getByTestId('confirm-rotate').click();
      assert.deepEqual((await rotated).postDataJSON(), { overlap_seconds: 86_400 });
      await dialog.getByTestId('rotated-with-overlap').waitFor();
      const fresh = await dialog.getByTestId('secret-value').inputValue();
      assert.notEqual(fresh, secret);
      await dialog.getByRole('button', { name: 'I have saved the secret' }).click();
      await dialog.waitFor({ state: 'hidden' });
      await page.getByTestId('overlap-fact').waitFor();

      const during = await lastRequest();
      assert.equal(String(during.headers['webhook-signature']).split(' ').length, 2);
      for (const s of [fresh, secret]) assert.ok(new Webhook(s).verify(during.body, during.headers as Record<string, string>));

      await page.getByTestId('rotate-secret').click();
      await dialog.getByTestId('overlap-running').waitFor();
      await dialog.getByTestId('end-overlap').click();
      await dialog.getByTestId('overlap-running').waitFor({ state: 'hidden' });
      await dialog.getByRole('button', { name: 'Cancel' }).click();
      await page.getByTestId('overlap-fact').waitFor({ state: 'hidden' });

      const afterwards = await lastRequest();
      assert.equal(String(afterwards.headers['webhook-signature']).split(' ').length, 1);
      assert.throws(() => new Webhook(secret).verify(afterwards.body, afterwards.headers as Record<string, string>));
      secret = fresh;
    });

    test('changing the scheme in the edit form warns, then shows the new secret once; requests are signed in the new scheme', async () => {
      const detail = page.url();
      await page.goto(`${detail}/edit`);
      await heading('Edit endpoint').waitFor();
      await page.getByTestId('scheme-herald').check();
      await page.getByTestId('scheme-change-note').waitFor();
      await page.getByTestId('submit-endpoint').click();
      const fresh = await page.getByTestId('secret-value').inputValue();
      assert.match(fresh, /^whsec_[A-Za-z0-9_-]{43}$/);
      await page.getByTestId('secret-done').click();
      await page.getByTestId('scheme-fact').getByText('Herald').waitFor();
      assert.ok(!(await page.content()).includes(fresh), 'the secret is gone once the user moves on');

      const sent = await lastRequest();
      assert.equal(sent.headers['x-service-signature'], opensslSignature(fresh, String(sent.headers['x-service-timestamp']), sent.body));
      assert.deepEqual(browser.errors, []);
    });
  });
}
