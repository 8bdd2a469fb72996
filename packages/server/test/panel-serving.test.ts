import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { PANEL_CSP } from '../src/http/panel.ts';
import { createTestHerald, type TestHerald } from './helpers/herald.ts';

/**
 * How Herald serves the control panel, on a small stand-in build (the real
 * one is checked in Chromium by panel-browser.test.ts): which paths are
 * files, which get index.html, which stay the API's, and the headers.
 */
describe('serving the control panel', () => {
  let dist: string;
  let h: TestHerald;
  let app: FastifyInstance;
  const html = { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' };

  before(async () => {
    dist = await mkdtemp(join(tmpdir(), 'herald-panel-dist-'));
    await mkdir(join(dist, 'assets'));
    await writeFile(join(dist, 'index.html'), '<!doctype html><script type="module" src="/assets/index-abc123.js"></script>');
    await writeFile(join(dist, 'assets', 'index-abc123.js'), 'console.log("panel")');
    await writeFile(join(dist, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
    h = await createTestHerald('pglite', { panel: { root: dist } });
    app = h.app;
  });
  after(async () => {
    await h.close();
    await rm(dist, { recursive: true, force: true });
  });

  test('/ is the page, revalidated on every load, under a CSP with no inline code', async () => {
    const res = await app.inject({ url: '/' });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^text\/html/);
    assert.equal(res.headers['cache-control'], 'no-cache');
    assert.equal(res.headers['content-security-policy'], PANEL_CSP);
    assert.match(PANEL_CSP, /default-src 'self'/);
    assert.doesNotMatch(PANEL_CSP, /unsafe-inline|unsafe-eval|data:|\*/);
    assert.equal(res.headers['x-content-type-options'], 'nosniff');
    assert.ok(res.headers.etag, 'an ETag lets the browser revalidate cheaply');
  });

  test('hashed assets are cached for a year; other files are revalidated', async () => {
    const asset = await app.inject({ url: '/assets/index-abc123.js' });
    assert.equal(asset.statusCode, 200);
    assert.equal(asset.headers['cache-control'], 'public, max-age=31536000, immutable');
    assert.match(String(asset.headers['content-type']), /javascript/);
    const icon = await app.inject({ url: '/favicon.svg' });
    assert.equal(icon.statusCode, 200);
    assert.equal(icon.headers['cache-control'], 'no-cache');
  });

  test('a page of the panel that a browser asks for gets index.html (bookmarks and reloads work)', async () => {
    for (const url of ['/settings/webhooks', '/settings/webhooks/6f1c2a7e-9b3d-4e58-a1c4-2d7e8f9a0b1c/edit', '/sign-in?next=%2Fsettings']) {
      const res = await app.inject({ url, headers: html });
      assert.equal(res.statusCode, 200, url);
      assert.match(res.body, /^<!doctype html>/, url);
    }
  });

  test('the API stays the API: unknown /v1 paths, missing assets and non-browser requests are problem+json 404s', async () => {
    for (const url of ['/v1/nothing-here', '/v1', '/assets/index-gone.js', '/settings/webhooks']) {
      const res = await app.inject({ url, headers: url === '/settings/webhooks' ? { accept: 'application/json' } : html });
      assert.equal(res.statusCode, 404, url);
      assert.match(String(res.headers['content-type']), /^application\/problem\+json/, url);
    }
    // Routes of the API are untouched by the panel.
    assert.equal((await app.inject({ url: '/healthz', headers: html })).statusCode, 200);
    assert.equal((await h.api('GET', '/v1/event-types')).status, 200);
    assert.equal((await app.inject({ url: '/v1/endpoints', headers: html })).statusCode, 401);
  });

  test('no path leaves the build folder', async () => {
    for (const url of ['/../package.json', '/assets/../../package.json', '/%2e%2e/package.json', '/assets/%2e%2e/%2e%2e/package.json']) {
      const res = await app.inject({ url, headers: html });
      assert.ok(!res.body.includes('"name"'), `${url} answered ${res.statusCode} with a file from outside dist`);
    }
  });
});

describe('the control panel when it has not been built', () => {
  test('pages answer 503 with the command to run; the API keeps working', async () => {
    const empty = await mkdtemp(join(tmpdir(), 'herald-panel-missing-'));
    const h = await createTestHerald('pglite', { panel: { root: join(empty, 'dist') } });
    try {
      const res = await h.app.inject({ url: '/settings/webhooks', headers: { accept: 'text/html' } });
      assert.equal(res.statusCode, 503);
      assert.match(String(res.headers['content-type']), /^text\/html/);
      assert.equal(res.headers['cache-control'], 'no-store');
      assert.match(res.body, /npm run build -w @herald\/panel/);
      assert.equal((await h.app.inject({ url: '/healthz' })).statusCode, 200);
      assert.equal((await h.api('GET', '/v1/event-types')).status, 200);
      assert.match(h.logs(), /the control panel is not built/);
    } finally {
      await h.close();
      await rm(empty, { recursive: true, force: true });
    }
  });
});
