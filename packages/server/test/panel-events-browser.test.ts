import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { panelDistDir } from '@herald/panel';
import type { Page } from 'playwright-core';
import { createUser } from '../src/services/users.ts';
import { runReplays } from '../src/services/replays.ts';
import { insertEventsWithDeliveries } from '../src/storage/queries/events.ts';
import { openBrowser, screenshot, unlabelledControls, type TestBrowser } from './helpers/browser.ts';
import { alarmData, createTestHerald, newEvent, type TestHerald } from './helpers/herald.ts';
import { startReceiver, type Receiver } from './helpers/receiver.ts';

/**
 * The Events and Replays pages in a real browser against a listening Herald,
 * with real deliveries to receivers on loopback. Replays are run by calling
 * what the maintainer calls, and the dispatcher is driven by drain(): nothing
 * waits on the wall clock for either.
 */

before(() => {
  execFileSync(process.execPath, [fileURLToPath(new URL('../../panel/scripts/ensure-built.mjs', import.meta.url))], { stdio: 'inherit' });
});

describe('finding events, resending and replaying them in the panel', () => {
  let h: TestHerald;
  let origin: string;
  let good: Receiver;
  let bad: Receiver;
  let browser: TestBrowser;
  let page: Page;
  let toGood: { id: string; url: string };
  let toBad: { id: string; url: string };
  const created: Array<{ id: string; type: string }> = [];
  const user = { name: 'Ada Lovelace', email: 'ada@acme.example', password: 'correct horse battery staple' };

  before(async () => {
    h = await createTestHerald('pglite', { panel: { root: panelDistDir }, dispatcher: { retry: { baseMs: 1, factor: 1, capMs: 1, jitter: 0, maxRetries: 0 } } });
    // The panel shows times relative to the browser's clock; start Herald's there.
    h.clock.set(new Date());
    origin = await h.app.listen({ host: '127.0.0.1', port: 0 });
    good = await startReceiver();
    bad = await startReceiver();
    bad.respond({ status: 500 });
    await createUser(h.db, h.deps.passwords, h.accountId, user);
    toGood = (await h.api('POST', '/v1/endpoints', { url: good.url, event_types: ['alarm.created', 'alarm.resolved'] })).json;
    toBad = (await h.api('POST', '/v1/endpoints', { url: `${bad.url}/bad`, event_types: ['alarm.created'] })).json;
    for (let i = 0; i < 4; i++) {
      const type = i % 2 === 0 ? 'alarm.created' : 'alarm.resolved';
      const data = type === 'alarm.created' ? alarmData() : alarmData({ resolved: true, resolved_at: '2026-11-20T09:00:00.000Z' });
      const res = await h.api('POST', '/v1/events', { type, data });
      assert.equal(res.status, 202);
      created.push(res.json);
      h.clock.advance(1_000);
    }
    await h.drain({ advanceMs: 10 });
    browser = await openBrowser();
    page = browser.page;
  });
  after(async () => {
    await browser?.close();
    await good?.close();
    await bad?.close();
    await h?.close();
  });

  const heading = (name: string | RegExp) => page.getByRole('heading', { name, level: 1 });
  const rowIds = async () => page.getByTestId('event-row').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-event-id')));

  test('the Events page: a nav item, every event newest first with its count, and ids told apart by their tails', async () => {
    await page.goto(`${origin}/events`);
    await heading('Sign in to Herald').waitFor();
    await page.getByLabel('Email').fill(user.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await heading('Events').waitFor();
    assert.equal(new URL(page.url()).pathname, '/events');
    assert.equal(await page.getByRole('navigation', { name: 'Settings' }).getByRole('link', { name: 'Events' }).getAttribute('aria-current'), 'page');
    await page.getByTestId('event-count').getByText('4 events match').waitFor();
    assert.deepEqual(await rowIds(), created.map((e) => e.id).reverse());
    const shortIds = await page.getByTestId('event-short-id').allInnerTexts();
    assert.equal(new Set(shortIds).size, 4, `ids made within a second are told apart: ${shortIds.join(' ')}`);
    assert.deepEqual(shortIds, created.map((e) => `…${e.id.slice(-8)}`).reverse());
    assert.deepEqual(await unlabelledControls(page), []);
    await screenshot(page, 'events');
  });

  test('search by state, endpoint, type and id; the count follows; the search is in the address', async () => {
    await page.getByTestId('search-state').selectOption('failed');
    await page.getByTestId('search-submit').click();
    await page.getByTestId('event-count').getByText('2 events match').waitFor();
    assert.deepEqual(await rowIds(), [created[2]!.id, created[0]!.id]);
    assert.equal(new URL(page.url()).searchParams.get('state'), 'failed');

    await page.getByTestId('search-state').selectOption('');
    await page.getByTestId('search-endpoint').selectOption(toGood.id);
    await page.getByTestId('search-type').selectOption('alarm.resolved');
    await page.getByTestId('search-submit').click();
    await page.getByTestId('event-count').getByText('2 events match').waitFor();
    assert.deepEqual(await rowIds(), [created[3]!.id, created[1]!.id]);

    await page.getByTestId('search-clear').click();
    await page.getByTestId('event-count').getByText('4 events match').waitFor();
    await page.getByTestId('search-id').fill(created[1]!.id.toUpperCase());
    await page.getByTestId('search-submit').click();
    await page.getByTestId('event-count').getByText('1 event matches').waitFor();
    assert.deepEqual(await rowIds(), [created[1]!.id]);

    await page.getByTestId('search-id').fill('0196');
    await page.getByTestId('search-submit').click();
    await page.getByTestId('search-id-error').getByText('Paste a whole event id.').waitFor();
  });

  test("an event's page: payload, deliveries per endpoint with their attempts; resend to the endpoint that failed", async () => {
    await page.goto(`${origin}/events?state=failed`);
    await page.getByTestId('event-count').getByText('2 events match').waitFor();
    await page.locator(`[data-event-id="${created[0]!.id}"]`).getByRole('link').click();
    await heading('alarm.created').waitFor();
    assert.equal(await page.getByTestId('event-id').innerText(), created[0]!.id);
    assert.equal(JSON.parse(await page.getByTestId('event-payload').innerText()).id, created[0]!.id);
    const failing = page.locator(`[data-testid="delivery-group"][data-endpoint-id="${toBad.id}"]`);
    await failing.getByTestId('delivery-state').getByText('Failed').waitFor();
    await failing.getByTestId('delivery-attempt').getByTestId('outcome-badge').getByText('500').waitFor();
    const fine = page.locator(`[data-testid="delivery-group"][data-endpoint-id="${toGood.id}"]`);
    await fine.getByTestId('delivery-state').getByText('Succeeded').waitFor();
    assert.equal(await page.getByTestId('delivery-group').count(), 2);
    await screenshot(page, 'event-detail');

    bad.respond({ status: 200 });
    const before = bad.requests.length;
    await failing.getByTestId('resend').click();
    await page.getByTestId('resend-done').getByText(/queued to .* again/).waitFor();
    await failing.getByTestId('delivery-state').getByText('Pending').waitFor();
    await h.drain({ advanceMs: 10 });
    assert.equal(bad.requests.length, before + 1);
    assert.equal(bad.requests[before]!.headers['x-service-event-id'], created[0]!.id);
    await page.reload();
    await failing.getByTestId('delivery-state').getByText('Succeeded').waitFor();
    assert.equal(await failing.getByTestId('delivery-attempt').count(), 2, 'both rounds in the attempt log');
    const attemptIds = await failing.getByTestId('attempt-short-id').allInnerTexts();
    assert.equal(new Set(attemptIds).size, 2);

    // An endpoint that subscribed after the event was published can be sent it from here.
    const late = (await h.api('POST', '/v1/endpoints', { url: `${good.url}/late`, event_types: ['alarm.created'] })).json;
    await page.reload();
    const missing = page.getByTestId('not-delivered');
    await missing.getByText(`${good.url}/late`).waitFor();
    const fromGood = good.requests.length;
    await missing.getByTestId('send-other').click();
    await page.getByTestId('resend-done').getByText(`queued to ${good.url}/late again`, { exact: false }).waitFor();
    await page.locator(`[data-testid="delivery-group"][data-endpoint-id="${late.id}"]`).getByTestId('delivery-state').getByText('Pending').waitFor();
    await h.drain({ advanceMs: 10 });
    assert.deepEqual(good.requests.slice(fromGood).map((r) => [r.path, r.headers['x-service-event-id']]), [[new URL(`${good.url}/late`).pathname, created[0]!.id]]);
    assert.equal((await h.api('DELETE', `/v1/endpoints/${late.id}`)).status, 204);
  });

  test('select all matching, replay to one endpoint with the count to confirm, and watch its progress', async () => {
    // More than a page: 55 more resolved alarms, delivered.
    const at = h.clock.now();
    await insertEventsWithDeliveries(
      h.db,
      Array.from({ length: 55 }, (_, i) => newEvent({ accountId: h.accountId, type: 'alarm.resolved', data: alarmData({ resolved: true, resolved_at: at.toISOString() }), createdAt: new Date(at.getTime() - 60_000 - i) })),
      h.clock.now(),
    );
    await h.drain({ advanceMs: 10 });

    await page.goto(`${origin}/events?type=alarm.resolved`);
    await page.getByTestId('event-count').getByText('57 events match').waitFor();
    assert.equal(await page.getByTestId('event-row').count(), 50, 'a page of 50');
    await page.getByTestId('select-shown').check();
    await page.getByTestId('select-all-note').getByText('The 50 events shown are selected.').waitFor();
    await page.getByTestId('select-all-matching').click();
    await page.getByTestId('replay-selected').getByText('Replay 57').waitFor();
    await page.getByTestId('replay-selected').click();

    const dialog = page.getByTestId('replay-dialog');
    await dialog.getByTestId('replay-count').getByText(/^57 events will be sent again to every subscribed endpoint \(2 enabled endpoints now\)\.$/).waitFor();
    await dialog.getByTestId('replay-target').selectOption(toGood.id);
    await dialog.getByTestId('replay-count').getByText(`57 events will be sent again to ${toGood.url}.`).waitFor();
    assert.equal(await dialog.getByTestId('confirm-replay').innerText(), 'Replay 57 events');
    await screenshot(page, 'replay-dialog');
    const sent = page.waitForRequest((r) => r.method() === 'POST' && new URL(r.url()).pathname === '/v1/replays' && !r.postDataJSON().dry_run);
    await dialog.getByTestId('confirm-replay').click();
    const request = await sent;
    assert.deepEqual(request.postDataJSON(), { filter: { types: ['alarm.resolved'] }, endpoint_id: toGood.id });
    assert.ok(request.headers()['idempotency-key'], 'sent with an Idempotency-Key');

    await heading('Replays').waitFor();
    await page.getByTestId('replay-started').waitFor();
    const row = page.getByTestId('replay-row').first();
    await row.getByTestId('replay-state').getByText('Running').waitFor();
    assert.match(await row.getByTestId('replay-done').innerText(), /^0 of 57 events/);
    assert.equal(await row.getByTestId('replay-by').innerText(), user.name);

    const before = good.requests.length;
    await runReplays(h.deps, { maxBatches: 10 });
    // The page reads the replay again while it runs, and shows it done.
    await row.getByTestId('replay-state').getByText('Completed').waitFor();
    assert.match(await row.getByTestId('replay-done').innerText(), /^57 of 57 events · 57 deliveries/);
    await screenshot(page, 'replays');
    await h.drain({ advanceMs: 10 });
    assert.equal(good.requests.length - before, 57, 'each event once more, to that endpoint only');
  });

  test('replay two chosen events to every endpoint: a disabled one is passed over; a running replay can be canceled', async () => {
    assert.equal((await h.api('POST', `/v1/endpoints/${toBad.id}/disable`)).status, 200);
    await page.goto(`${origin}/events?type=alarm.created`);
    await page.getByTestId('event-count').getByText('2 events match').waitFor();
    for (const e of [created[0]!, created[2]!]) await page.locator(`[data-event-id="${e.id}"]`).getByTestId('select-event').check();
    await page.getByTestId('replay-selected').getByText('Replay 2').click();
    const dialog = page.getByTestId('replay-dialog');
    await dialog.getByTestId('replay-count').getByText('2 events will be sent again to every subscribed endpoint (1 enabled endpoint now).').waitFor();
    assert.equal(await dialog.getByTestId('replay-target').locator(`option[value="${toBad.id}"]`).isDisabled(), true, 'a disabled endpoint cannot be chosen');
    await dialog.getByTestId('confirm-replay').click();
    await heading('Replays').waitFor();
    const row = page.getByTestId('replay-row').first();
    await row.getByTestId('replay-state').getByText('Running').waitFor();
    await runReplays(h.deps, { maxBatches: 10 });
    await row.getByTestId('replay-state').getByText('Completed').waitFor();
    assert.match(await row.getByTestId('replay-done').innerText(), /^2 of 2 events · 2 deliveries · 2 to disabled endpoints skipped$/);
    await h.drain({ advanceMs: 10 });

    // Another, canceled before it runs: nothing is sent.
    await page.goto(`${origin}/events?type=alarm.created`);
    await page.getByTestId('event-count').getByText('2 events match').waitFor();
    await page.getByTestId('select-shown').check();
    await page.getByTestId('replay-selected').click();
    await page.getByTestId('replay-dialog').getByTestId('replay-count').getByText(/^2 events will be sent again/).waitFor();
    await page.getByTestId('replay-dialog').getByTestId('confirm-replay').click();
    await heading('Replays').waitFor();
    const newest = page.getByTestId('replay-row').first();
    await newest.getByTestId('replay-state').getByText('Running').waitFor();
    await newest.getByTestId('cancel-replay').click();
    await newest.getByTestId('replay-state').getByText('Canceled').waitFor();
    assert.equal(await runReplays(h.deps, { maxBatches: 10 }), 0);
    assert.equal(await page.getByTestId('replay-row').count(), 3, 'the history keeps every replay');
    assert.deepEqual(await unlabelledControls(page), []);
  });
});
