import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { panelDistDir } from '@herald/panel';
import type { Page } from 'playwright-core';
import { createApiKey } from '../src/services/accounts.ts';
import { clipboardText, fetchJson, openBrowser, screenshot, scrollsSideways, unlabelledControls, type TestBrowser } from './helpers/browser.ts';
import { alarmData, createTestHerald, type TestHerald } from './helpers/herald.ts';
import { startReceiver, type Receiver } from './helpers/receiver.ts';

/**
 * The panel's screens for investigating and acting: API keys, the event
 * catalog, disabling an endpoint by hand and who did it, delivery health
 * over a window, the attempt log's ids and retries, and the API reference at
 * /docs. Real Chromium against a real listening Herald; nothing sleeps on the
 * wall clock: every wait is on a condition of the page.
 */

before(() => {
  execFileSync(process.execPath, [fileURLToPath(new URL('../../panel/scripts/ensure-built.mjs', import.meta.url))], { stdio: 'inherit' });
});

/** Chromium logs every 4xx fetch; these are answers the panel expects. */
function unexpectedErrors(errors: string[]): string[] {
  return errors.filter((e) => !/^Failed to load resource: the server responded with a status of (401|404) .*\/v1\/(session|setup)\)$/.test(e));
}

describe('the control panel: keys, catalog, disabling, health and the API reference', () => {
  let h: TestHerald;
  let origin: string;
  let receiver: Receiver;
  let browser: TestBrowser;
  let page: Page;
  let publisherKey: string;
  let endpointId: string;
  const user = { account: 'Acme Logistics', name: 'Ada Lovelace', email: 'ada@acme.example', password: 'correct horse battery staple' };

  before(async () => {
    // A 500 is retried (once, a minute later); two failed deliveries in a row would disable.
    h = await createTestHerald('pglite', {
      panel: { root: panelDistDir },
      dispatcher: { disableAfter: 5, retry: { baseMs: 60_000, factor: 1, capMs: 60_000, jitter: 0, maxRetries: 1 } },
    });
    h.clock.set(new Date());
    origin = await h.app.listen({ host: '127.0.0.1', port: 0 });
    receiver = await startReceiver();
    const setup = await h.call('POST', '/v1/setup', {
      body: { account_name: user.account, name: user.name, email: user.email, password: user.password, setup_token: h.setupToken.value },
    });
    assert.equal(setup.status, 201, JSON.stringify(setup.json));
    browser = await openBrowser({ permissions: ['clipboard-read', 'clipboard-write'] });
    page = browser.page;
  });
  after(async () => {
    await browser?.close();
    await receiver?.close();
    await h?.close();
  });

  const heading = (name: string | RegExp) => page.getByRole('heading', { name, level: 1 });

  test('the API reference at /docs is Herald\u2019s, and loads under its CSP with a clean console', async () => {
    const docs = await openBrowser();
    try {
      const response = (await docs.page.goto(`${origin}/docs`))!;
      assert.match(response.headers()['content-security-policy'] ?? '', /style-src 'self'(;|$)/, 'no unsafe-inline');
      await docs.page.getByRole('heading', { name: /Herald API/ }).first().waitFor();
      await docs.page.waitForLoadState('networkidle');
      assert.equal(await docs.page.title(), 'Herald API reference');
      const bar = docs.page.locator('.herald-docs-bar');
      await bar.getByText('Herald', { exact: true }).waitFor();
      await bar.getByRole('link', { name: 'Control panel' }).waitFor();
      assert.equal(await docs.page.locator('.topbar').count(), 0, 'no Swagger top bar, nor its logo');
      assert.equal(await docs.page.locator('link[rel="icon"]').getAttribute('href'), '/docs/static/theme/herald.svg');
      // Open an operation: its parameters and schemas render under the same CSP.
      await docs.page.locator('.opblock-summary').filter({ hasText: '/v1/endpoints/{id}/stats' }).first().click();
      await docs.page.getByText('How far back: 1h, 24h (the default) or 7d.').waitFor();
      await docs.page.waitForLoadState('networkidle');
      assert.deepEqual(docs.errors, [], 'no console error, CSP violations included');
      const origins = new Set(docs.requests.map((r) => new URL(r.url()).origin));
      assert.deepEqual([...origins], [origin], 'everything from Herald');
      await screenshot(docs.page, 'api-reference');
    } finally {
      await docs.close();
    }
  });

  test('sign in; the side navigation leads to the new pages and marks the current one', async () => {
    await page.goto(`${origin}/sign-in`);
    await page.getByLabel('Email').fill(user.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await heading('Webhooks').waitFor();
    const nav = page.getByRole('navigation', { name: 'Settings' });
    assert.equal(await nav.getByRole('link', { name: 'Webhooks' }).getAttribute('aria-current'), 'page');
    await nav.getByRole('link', { name: 'API keys' }).click();
    await heading('API keys').waitFor();
    assert.equal(await nav.getByRole('link', { name: 'API keys' }).getAttribute('aria-current'), 'page');
    assert.equal(await nav.getByRole('link', { name: 'Webhooks' }).getAttribute('aria-current'), null);
  });

  test('API keys: create one, see it once and copy it; it works; revoke it after confirming, and it stops working', async () => {
    await page.getByTestId('api-keys-empty').getByText('No API keys yet').waitFor();
    await page.getByTestId('create-api-key').first().click();
    const dialog = page.getByTestId('create-key-dialog');
    await dialog.getByLabel('Name').fill('billing service');
    await dialog.getByTestId('confirm-create-key').click();
    await dialog.getByText('You will not see this key again.').waitFor();
    const key = await dialog.getByTestId('key-value').inputValue();
    assert.match(key, /^hk_/);
    await dialog.getByTestId('copy-key').click();
    await dialog.getByText('Copied to the clipboard.').waitFor();
    assert.equal(await clipboardText(page), key);
    await screenshot(page, 'api-key-shown-once');
    await dialog.getByTestId('key-done').click();
    await dialog.waitFor({ state: 'hidden' });
    assert.ok(!(await page.content()).includes(key), 'the key is gone once the dialog closes');

    const row = page.getByTestId('api-key-row').filter({ hasText: 'billing service' });
    await row.waitFor();
    const prefix = key.split('_').slice(0, 2).join('_');
    assert.equal(await row.getByTestId('api-key-prefix').textContent(), `${prefix}_…`);
    await row.getByTestId('api-key-status').getByText('Active').waitFor();
    await row.locator('time').first().waitFor();
    assert.equal((await h.api('GET', '/v1/endpoints', undefined, key)).status, 200, 'the key works');

    // Cancel keeps it.
    await row.getByTestId('revoke-api-key').click();
    const revoke = page.getByTestId('revoke-key-dialog');
    await revoke.getByText('billing service').waitFor();
    await page.keyboard.press('Escape');
    await revoke.waitFor({ state: 'hidden' });
    assert.equal((await h.api('GET', '/v1/endpoints', undefined, key)).status, 200, 'still works');

    await row.getByTestId('revoke-api-key').click();
    await screenshot(page, 'api-key-revoke');
    await revoke.getByTestId('confirm-revoke').click();
    await page.getByTestId('notice').getByText(/is revoked/).waitFor();
    await row.getByTestId('api-key-status').getByText('Revoked').waitFor();
    assert.equal(await row.getByTestId('revoke-api-key').count(), 0);
    assert.equal((await h.api('GET', '/v1/endpoints', undefined, key)).status, 401, 'the key no longer works');
    await screenshot(page, 'api-keys');
  });

  test('the event catalog lists every type with its schema and example, and filters by name', async () => {
    await page.getByRole('navigation', { name: 'Settings' }).getByRole('link', { name: 'Event catalog' }).click();
    await heading('Event catalog').waitFor();
    const catalog = await fetchJson<{ data: Array<{ name: string; example: unknown }> }>(page, '/v1/event-types');
    await page.getByTestId('event-type').first().waitFor();
    assert.equal(await page.getByTestId('event-type').count(), catalog.data.length);

    const card = page.locator('[data-testid="event-type"][data-type="alarm.created"]');
    await card.getByTestId('event-type-example').locator('summary').click();
    const example = await card.getByTestId('event-type-example').locator('pre').textContent();
    assert.deepEqual(JSON.parse(example!), catalog.data.find((t) => t.name === 'alarm.created')!.example);
    await card.getByTestId('event-type-schema').locator('summary').click();
    assert.match((await card.getByTestId('event-type-schema').locator('pre').textContent())!, /"type": "object"/);
    await screenshot(page, 'event-catalog');

    await page.getByTestId('catalog-filter').fill('resolved');
    await page.locator('[data-testid="event-type"][data-type="alarm.created"]').waitFor({ state: 'detached' });
    const names = await page.getByTestId('event-type').evaluateAll((els) => els.map((e) => e.getAttribute('data-type')));
    assert.ok(names.length > 0 && names.every((n) => n!.includes('resolved')), names.join(', '));
    await page.getByTestId('catalog-filter').fill('no such type here');
    await page.getByTestId('catalog-no-match').waitFor();
  });

  test('delivery health counts deliveries, not tests or attempts, over the chosen window, with latency percentiles', async () => {
    const session = await fetchJson<{ account: { id: string } }>(page, '/v1/session');
    publisherKey = (await createApiKey(h.db, session.account.id)).key;
    const created = await h.api('POST', '/v1/endpoints', { url: receiver.url, event_types: ['alarm.created'] }, publisherKey);
    endpointId = created.json.id;

    await page.goto(`${origin}/settings/webhooks/${endpointId}`);
    await page.getByTestId('send-test').click();
    await page.getByTestId('test-result').getByTestId('outcome-badge').getByText('204').waitFor();
    await page.getByTestId('delivery-counts').getByText('No deliveries in the last 24 hours. Test events are not counted.').waitFor();
    assert.equal(await page.getByTestId('success-rate').textContent(), '–');

    // Two deliveries succeed (one slowly), one fails once and succeeds on its retry, one is refused.
    receiver.respond((_req, i) => (i === 1 ? { status: 204, delayMs: 400 } : { status: 204 }));
    for (let i = 0; i < 2; i++) await publish();
    await h.drain({ advanceMs: 0 });
    receiver.respond({ status: 500 });
    await publish();
    await h.dispatcher.tick();
    receiver.respond({ status: 204 });
    await h.drain({ advanceMs: 60_000 });
    receiver.respond({ status: 410 });
    await publish();
    await h.drain({ advanceMs: 0 });

    await page.getByRole('button', { name: 'Refresh the attempt log' }).click();
    await page.getByTestId('delivery-counts').getByText(/^4 deliveries in the last 24 hours: 3 succeeded, 1 failed/).waitFor();
    assert.equal(await page.getByTestId('success-rate').textContent(), '75%', 'per delivery: the retried one counts once');
    await page.getByTestId('success-detail').getByText('of 4 deliveries succeeded').waitFor();
    for (const p of ['p50', 'p95', 'p99']) assert.match((await page.getByTestId(`latency-${p}`).textContent())!, /^\d+(\.\d+)? m?s$/, p);
    const p99 = (await page.getByTestId('latency-p99').textContent())!;
    assert.ok(parseFloat(p99) * (p99.endsWith(' s') ? 1000 : 1) >= 400, `the slow request is the p99: ${p99}`);
    assert.equal(await page.getByTestId('health-bucket').count(), 24);
    await screenshot(page, 'delivery-health');

    await page.getByTestId('window-1h').click();
    assert.equal(await page.getByTestId('window-1h').getAttribute('aria-pressed'), 'true');
    await page.getByTestId('delivery-counts').getByText(/^4 deliveries in the last hour/).waitFor();
    assert.equal(await page.getByTestId('health-bucket').count(), 12);
    await page.getByTestId('window-24h').click();
  });

  async function publish() {
    const res = await h.api('POST', '/v1/events', { type: 'alarm.created', data: alarmData({ id: crypto.randomUUID() }) }, publisherKey);
    assert.equal(res.status, 202);
  }

  test('the attempt log tells apart ids that start alike and copies the whole id', async () => {
    await page.getByTestId('attempt-row').nth(4).waitFor();
    const log = await fetchJson<{ data: Array<{ event_id: string; is_test: boolean }> }>(page, `/v1/endpoints/${endpointId}/attempts`);
    const deliveries = log.data.filter((a) => !a.is_test);
    const ids = [...new Set(deliveries.map((a) => a.event_id))];
    assert.ok(ids.length >= 3);
    assert.ok(new Set(ids.map((id) => id.slice(0, 8))).size < ids.length, 'time-ordered ids made close together share their start');
    const shown = await page.getByTestId('short-id').allTextContents();
    const distinct = new Set(shown.filter((_t, i) => !log.data[i]!.is_test));
    assert.equal(distinct.size, ids.length, `each event told apart: ${shown.join(' ')}`);
    const first = page.getByTestId('short-id').first();
    const full = (await first.getAttribute('data-id'))!;
    assert.equal(await first.textContent(), `…${full.slice(-8)}`);
    assert.match((await first.getAttribute('title'))!, new RegExp(full));
    await first.click();
    assert.equal(await clipboardText(page), full);
  });

  test('disable by hand: a confirm dialog, then the banner names who did it and when, with the time zone; a pending retry says skipped', async () => {
    // A delivery that failed once and waits for its retry (a second later, so that it is the newest attempt).
    h.clock.advance(1000);
    receiver.respond({ status: 503 });
    await publish();
    await h.dispatcher.tick();
    await page.getByRole('button', { name: 'Refresh the attempt log' }).click();
    const retrying = page.getByTestId('attempt-row').first();
    await retrying.getByTestId('outcome-badge').getByText('503 · Will retry').waitFor();

    await page.getByTestId('disable-endpoint').click();
    const dialog = page.getByTestId('disable-dialog');
    await dialog.getByText('Herald stops sending to').waitFor();
    // Cancel changes nothing.
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'hidden' });
    assert.equal((await h.api('GET', `/v1/endpoints/${endpointId}`, undefined, publisherKey)).json.state, 'enabled');

    await page.getByTestId('disable-endpoint').click();
    await dialog.getByLabel(/Reason/).fill('receiver down for maintenance');
    await screenshot(page, 'disable-dialog');
    await dialog.getByTestId('confirm-disable').click();
    const banner = page.getByTestId('disabled-banner');
    await banner.getByText('This endpoint is disabled').waitFor();
    await banner.getByTestId('disabled-by').getByText(/^Ada Lovelace disabled it by hand in the panel/).waitFor();
    assert.doesNotMatch((await banner.textContent())!, /Herald disabled it/);
    assert.equal(await banner.getByTestId('disabled-reason').textContent(), 'receiver down for maintenance');
    // The same format as every exact time in the panel, with the zone (the browser is in Europe/Berlin).
    const at = (await banner.getByTestId('disabled-at').textContent())!;
    assert.match(at, /\d{4}, \d\d:\d\d:\d\d( [AP]M)? (GMT\+1|GMT\+2|CET|CEST)$/);
    const exactInLog = (await page.getByTestId('attempt-row').first().locator('.time-exact').textContent())!;
    assert.equal(at.replace(/^.*?(\d\d:\d\d:\d\d) /, ''), exactInLog.replace(/^.*?(\d\d:\d\d:\d\d) /, ''), 'the same zone as the attempt log');
    await page.getByTestId('state-badge').getByText('Disabled').waitFor();
    assert.equal(await page.getByTestId('disable-endpoint').count(), 0, 'no Disable on a disabled endpoint');

    // The attempt that was to be retried now says what happens instead.
    const badge = page.getByTestId('attempt-row').first().getByTestId('outcome-badge');
    await badge.getByText('503 · Skipped').waitFor();
    assert.doesNotMatch((await page.getByTestId('attempt-log').textContent())!, /Will retry/);
    await screenshot(page, 'disabled-by-hand');

    // Herald's own disabling still says so.
    const api = await h.api('GET', `/v1/endpoints/${endpointId}`, undefined, publisherKey);
    assert.equal(api.json.disabled_by.type, 'user');
    assert.equal(api.json.disabled_by.name, user.name);

    await banner.getByTestId('re-enable').click();
    await banner.waitFor({ state: 'detached' });
    await page.getByTestId('disable-endpoint').waitFor();
  });

  test('later, the last hour has no deliveries while the week still has them all', async () => {
    await page.goto(`${origin}/settings/webhooks/${endpointId}`);
    await page.getByTestId('window-1h').click();
    await page.getByTestId('delivery-counts').getByText(/deliveries in the last hour/).waitFor();
    // Two hours later (within the session's idle time).
    h.clock.advance(2 * 3_600_000);
    await page.getByRole('button', { name: 'Refresh the attempt log' }).click();
    await page.getByTestId('delivery-counts').getByText('No deliveries in the last hour. Test events are not counted.').waitFor();
    assert.equal(await page.getByTestId('success-rate').textContent(), '–');
    await page.getByTestId('window-7d').click();
    await page.getByTestId('delivery-counts').getByText(/^5 deliveries in the last 7 days: 3 succeeded, 1 failed, 1 skipped/).waitFor();
    assert.equal(await page.getByTestId('health-bucket').count(), 28);
  });

  test('the new screens are labelled, fit a 375 px screen, and left no console error', async () => {
    await page.setViewportSize({ width: 375, height: 740 });
    try {
      for (const [path, name] of [
        ['/settings/api-keys', 'API keys'],
        ['/settings/event-types', 'Event catalog'],
        [`/settings/webhooks/${endpointId}`, /127\.0\.0\.1|localhost/],
      ] as const) {
        await page.goto(`${origin}${path}`);
        await heading(name).waitFor();
        await page.waitForLoadState('networkidle');
        assert.deepEqual(await unlabelledControls(page), [], `${path}: every control has a name`);
        assert.equal(await scrollsSideways(page), false, `${path}: no sideways scrolling at 375 px`);
      }
    } finally {
      await page.setViewportSize({ width: 1280, height: 860 });
    }
    assert.deepEqual(unexpectedErrors(browser.errors), []);
  });
});
