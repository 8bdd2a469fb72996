import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { panelDistDir } from '@herald/panel';
import type { Frame, Page } from 'playwright-core';
import { openBrowser, type TestBrowser } from './helpers/browser.ts';
import { ENGINES } from './helpers/engines.ts';
import { createTestHerald, type TestHerald } from './helpers/herald.ts';
import { TLS } from './helpers/tls.ts';

/**
 * The panel embedded in another site's page, in Chromium: the platform's
 * page is served from another origin (http://localhost:<port>, while Herald
 * listens on http://127.0.0.1:<port>: another site, not only another
 * origin), and frames a one-time link its backend asked Herald for.
 */

before(() => {
  execFileSync(process.execPath, [fileURLToPath(new URL('../../panel/scripts/ensure-built.mjs', import.meta.url))], { stdio: 'inherit' });
});

const ACCENT = '#0a7d55';

/** A site that frames `?src=` in an iframe, as the platform's settings page would. */
async function startEmbeddingSite(): Promise<{ origin: string; server: Server }> {
  const server = createHttpServer((req, res) => {
    const src = new URL(req.url ?? '/', 'http://localhost').searchParams.get('src') ?? '';
    const attr = src.replace(/&/g, '&amp;').replace(/"/g, '&quot;');
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(`<!doctype html><html><head><title>Logistics settings</title></head>
<body><h1>Your webhooks</h1><iframe id="portal" src="${attr}" width="1100" height="760" title="Webhooks"></iframe></body></html>`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { origin: `http://localhost:${(server.address() as AddressInfo).port}`, server };
}

/** The logo, over https (the only scheme a link accepts), from a third origin. */
async function startLogoHost(): Promise<{ url: string; server: Server }> {
  const svg = '<svg xmlns="http://www.w3.org/2000/svg" width="120" height="28"><rect width="120" height="28" fill="#0a7d55"/></svg>';
  const server = createHttpsServer({ key: TLS.key, cert: TLS.cert }, (_req, res) => {
    res.writeHead(200, { 'content-type': 'image/svg+xml' });
    res.end(svg);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `https://localhost:${(server.address() as AddressInfo).port}/logo.svg`, server };
}

const close = (server: Server) => new Promise<void>((resolve) => server.close(() => resolve()));

for (const engine of ENGINES) {
  describe(`the panel embedded in another site through a portal link, in Chromium [${engine}]`, () => {
    let h: TestHerald;
    let herald: string;
    let site: { origin: string; server: Server };
    let otherSite: { origin: string; server: Server };
    let logo: { url: string; server: Server };
    let browser: TestBrowser;
    let page: Page;
    let customer: { accountId: string; apiKey: string };
    let endpointId: string;

    before(async () => {
      h = await createTestHerald(engine, { panel: { root: panelDistDir } });
      h.clock.set(new Date());
      herald = await h.app.listen({ host: '127.0.0.1', port: 0 });
      site = await startEmbeddingSite();
      otherSite = await startEmbeddingSite();
      logo = await startLogoHost();
      // The logo host's certificate is the test CA's, which this Chromium does not know.
      browser = await openBrowser({ ignoreHTTPSErrors: true });
      page = browser.page;
      customer = await h.newAccount('Northwind Freight');
      const mine = await h.api('POST', '/v1/endpoints', { url: 'https://hooks.northwind.example/herald', description: 'Northwind', event_types: ['alarm.created'] }, customer.apiKey);
      assert.equal(mine.status, 201);
      endpointId = mine.json.id;
      // Another account's endpoint, which the portal must never show.
      const theirs = await h.api('POST', '/v1/endpoints', { url: 'https://hooks.other.example/herald', event_types: ['alarm.created'] });
      assert.equal(theirs.status, 201);
    });
    after(async () => {
      await browser?.close();
      await Promise.all([site, otherSite, logo].filter(Boolean).map((s) => close(s.server)));
      await h?.close();
    });

    async function portalLink(body: Record<string, unknown>): Promise<string> {
      // Over HTTP, as the platform's backend asks: the link names the host it asked.
      const res = await fetch(`${herald}/v1/portal-sessions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${customer.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ allowed_origins: [site.origin], ...body }),
      });
      const json = (await res.json()) as { url: string };
      assert.equal(res.status, 201, JSON.stringify(json));
      assert.ok(json.url.startsWith(`${herald}/portal/hpl_`), json.url);
      return json.url;
    }

    /** Opens the embedding page on `at` with the link in its iframe; the iframe's frame. */
    async function embed(link: string, at = site.origin): Promise<Frame> {
      await page.goto(`${at}/?src=${encodeURIComponent(link)}`);
      const handle = await page.waitForSelector('#portal');
      const frame = await handle.contentFrame();
      assert.ok(frame, 'the iframe has a frame');
      return frame;
    }

    test('the link opens the panel signed in, for that account only, in the site\u2019s colour and logo', async () => {
      const link = await portalLink({ accent_color: ACCENT, logo_url: logo.url });
      const frame = await embed(link);
      await frame.getByTestId('account-name').waitFor();
      assert.equal(await frame.getByTestId('account-name').textContent(), 'Northwind Freight');
      await frame.getByRole('heading', { name: 'Webhooks', level: 1 }).waitFor();
      await frame.getByText('hooks.northwind.example').first().waitFor();
      assert.equal(await frame.getByText('hooks.other.example').count(), 0, 'another account\u2019s endpoint is not shown');
      assert.equal(new URL(frame.url()).pathname, '/settings/webhooks', 'the one-time link left the frame\u2019s address');

      // Theming: the accent on the buttons, the logo instead of Herald's, sign-out offered.
      const addButton = frame.getByTestId('add-endpoint');
      await addButton.waitFor();
      assert.equal(await frame.evaluate(`getComputedStyle(document.querySelector('[data-testid="add-endpoint"]')).backgroundColor`), 'rgb(10, 125, 85)');
      const img = frame.getByTestId('portal-logo');
      await img.waitFor();
      assert.equal(await img.getAttribute('src'), logo.url);
      await frame.waitForFunction(`document.querySelector('[data-testid="portal-logo"]').naturalWidth > 0`);
      assert.equal(await frame.getByRole('button', { name: 'Sign out' }).count(), 1);
      assert.deepEqual(browser.errors.filter((e) => e.startsWith('page error')), [], 'the panel runs without errors in a third-party frame');

      // It works: the panel's own requests carry the session token, not a cookie.
      assert.deepEqual(await page.context().cookies(herald), [], 'no cookie for Herald');

      // Signing out ends the session, on the server too.
      const token = await sessionTokenOf(frame, () => frame.getByRole('button', { name: 'Sign out' }).click());
      await frame.getByTestId('portal-ended').waitFor();
      const after = await fetch(`${herald}/v1/endpoints`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(after.status, 401);
    });

    test('a read-only session hides every change, and Herald refuses the session\u2019s writes', async () => {
      const link = await portalLink({ read_only: true, hide_sign_out: true });
      const frame = await embed(link);
      await frame.getByText('hooks.northwind.example').first().waitFor();
      await frame.getByTestId('read-only-note').waitFor();
      assert.equal(await frame.getByRole('button', { name: 'Sign out' }).count(), 0, 'sign-out hidden when asked');
      assert.equal(await frame.getByTestId('add-endpoint').isVisible(), false);

      const token = await sessionTokenOf(frame, () => frame.getByText('hooks.northwind.example').first().click());
      await frame.getByRole('heading', { level: 1 }).filter({ hasText: 'hooks.northwind.example' }).waitFor();
      for (const id of ['edit-endpoint', 'rotate-secret', 'delete-endpoint', 'send-test', 'open-recover']) {
        assert.equal(await frame.getByTestId(id).isVisible(), false, `${id} is hidden`);
      }
      // The attempt log still shows: reading is what a read-only session is for.
      await frame.getByRole('button', { name: 'Refresh the attempt log' }).waitFor();

      const write = await fetch(`${herald}/v1/endpoints/${endpointId}`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${token}` },
      });
      assert.equal(write.status, 403);
      assert.equal(((await write.json()) as { code: string }).code, 'read_only_session');
      assert.equal((await h.api('GET', `/v1/endpoints/${endpointId}`, undefined, customer.apiKey)).status, 200);
    });

    test('a page on an origin the link does not name cannot frame it', async () => {
      const link = await portalLink({});
      const blocked = page.waitForEvent('console', (m) => /frame-ancestors/.test(m.text()));
      const frame = await embed(link, otherSite.origin);
      await blocked;
      assert.ok(!frame.url().startsWith(herald), `the frame shows no Herald page (${frame.url()})`);
      assert.equal(await frame.locator('#app').count(), 0);
    });

    test('the link opens once: framing it again shows that it was used', async () => {
      const link = await portalLink({});
      const first = await embed(link);
      await first.getByTestId('account-name').waitFor();
      const second = await embed(link);
      await second.getByRole('heading', { name: 'This link was already used' }).waitFor();
      assert.equal(await second.getByTestId('account-name').count(), 0);
    });

    /** The bearer token the frame's next API request carries (made by `act`). */
    async function sessionTokenOf(frame: Frame, act: () => Promise<void>): Promise<string> {
      const request = page.waitForRequest((r) => r.frame() === frame && new URL(r.url()).pathname.startsWith('/v1/') && !!r.headers().authorization);
      await act();
      const token = /^Bearer (hps_\S+)$/.exec((await request).headers().authorization ?? '')?.[1];
      assert.ok(token, 'the panel sends its session token');
      return token;
    }
  });
}
