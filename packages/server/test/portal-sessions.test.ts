import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_PANEL_AUTH } from '../src/config.ts';
import { PANEL_CSP } from '../src/http/panel.ts';
import { createUser, csrfTokenFor, startSession } from '../src/services/users.ts';
import { ENGINES } from './helpers/engines.ts';
import { alarmData, createTestHerald, type TestHerald } from './helpers/herald.ts';
import { assertProblem } from './helpers/problem.ts';

const ORIGIN = 'https://app.logistics.example';
const html = { accept: 'text/html' };

/** The path of a link (`/portal/hpl_…`), from the API's answer. */
const pathOf = (url: string) => new URL(url).pathname;

for (const engine of ENGINES) {
  describe(`portal sessions: one-time links to the embedded panel [${engine}]`, () => {
    let h: TestHerald;
    let dist: string;

    before(async () => {
      dist = await mkdtemp(join(tmpdir(), 'herald-portal-dist-'));
      await mkdir(join(dist, 'assets'));
      await writeFile(join(dist, 'index.html'), '<!doctype html><html><head><script type="module" src="/assets/index-abc.js"></script></head><body></body></html>');
      h = await createTestHerald(engine, { panel: { root: dist } });
    });
    after(async () => {
      await h.close();
      await rm(dist, { recursive: true, force: true });
    });

    async function link(body: Record<string, unknown> = {}, key?: string) {
      const res = await h.api('POST', '/v1/portal-sessions', { allowed_origins: [ORIGIN], ...body }, key);
      assert.equal(res.status, 201, JSON.stringify(res.json));
      return res.json as { id: string; url: string; expires_at: string; account_id: string };
    }

    /** Opens a link as a browser would; the session token from the page, when it opened. */
    async function open(url: string) {
      const res = await h.app.inject({ url: pathOf(url), headers: html });
      const token = /<meta name="herald-portal-token" content="(hps_[A-Za-z0-9_-]{43})">/.exec(res.body)?.[1];
      return { res, token };
    }

    test('a link is refused unless every field is right, each problem naming its field', async () => {
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ allowed_origins: [] }, 'allowed_origins'],
        [{ allowed_origins: ['https://app.example.com/settings'] }, 'allowed_origins[0]'],
        [{ allowed_origins: ['https://app.example.com/'] }, 'allowed_origins[0]'],
        [{ allowed_origins: ['https://*.example.com'] }, 'allowed_origins[0]'],
        [{ allowed_origins: ['http://app.example.com'] }, 'allowed_origins[0]'],
        [{ allowed_origins: ['https://App.Example.com'] }, 'allowed_origins[0]'],
        [{ allowed_origins: ['https://app.example.com:443'] }, 'allowed_origins[0]'],
        [{ allowed_origins: ['https://user@app.example.com'] }, 'allowed_origins[0]'],
        [{ allowed_origins: ["'self'"] }, 'allowed_origins[0]'],
        [{ allowed_origins: ['https://a.example; script-src *'] }, 'allowed_origins[0]'],
        [{ allowed_origins: [ORIGIN, 'https://ok.example', 'ftp://x.example'] }, 'allowed_origins[2]'],
        [{ allowed_origins: [ORIGIN], accent_color: 'red' }, 'accent_color'],
        [{ allowed_origins: [ORIGIN], accent_color: '#12345g' }, 'accent_color'],
        [{ allowed_origins: [ORIGIN], logo_url: 'http://cdn.example.com/logo.svg' }, 'logo_url'],
        [{ allowed_origins: [ORIGIN], logo_url: 'javascript:alert(1)' }, 'logo_url'],
        [{ allowed_origins: [ORIGIN], logo_url: 'logo.svg' }, 'logo_url'],
        [{ allowed_origins: [ORIGIN], expires_in_minutes: 61 }, 'expires_in_minutes'],
        [{ allowed_origins: [ORIGIN], expires_in_minutes: 0 }, 'expires_in_minutes'],
        [{ allowed_origins: [ORIGIN], session_minutes: 721 }, 'session_minutes'],
        [{ allowed_origins: [ORIGIN], read_only: 'yes' }, 'read_only'],
      ];
      for (const [body, field] of cases) {
        const res = await h.api('POST', '/v1/portal-sessions', body);
        assertProblem(res, 'validation_failed', field);
      }
      assertProblem(await h.api('POST', '/v1/portal-sessions', {}), 'validation_failed', 'allowed_origins');
      assertProblem(await h.api('POST', '/v1/portal-sessions', { allowed_origins: [ORIGIN], colour: '#fff' }), 'validation_failed');
    });

    test('the answer: a link on this host, its expiry, the normalised theme', async () => {
      const res = await h.api('POST', '/v1/portal-sessions', {
        allowed_origins: [ORIGIN, 'http://localhost:5173', ORIGIN],
        accent_color: '#0A7',
        logo_url: 'https://cdn.example.com/logo.svg',
        hide_sign_out: true,
        read_only: true,
      });
      assert.equal(res.status, 201);
      assert.equal(res.headers['cache-control'], 'no-store');
      assert.match(res.json.url, /^http:\/\/localhost(:\d+)?\/portal\/hpl_[A-Za-z0-9_-]{43}$/);
      assert.equal(res.json.account_id, h.accountId);
      assert.equal(res.json.expires_at, new Date(h.clock.now().getTime() + 5 * 60_000).toISOString());
      assert.equal(res.json.session_minutes, 60);
      assert.deepEqual(res.json.allowed_origins, [ORIGIN, 'http://localhost:5173']);
      assert.deepEqual(res.json.theme, { accent_color: '#00aa77', logo_url: 'https://cdn.example.com/logo.svg', hide_sign_out: true });
      assert.equal(res.json.read_only, true);
    });

    test('an API key makes links for its own account only', async () => {
      const other = await h.newAccount('Rival Inc');
      assertProblem(await h.api('POST', '/v1/portal-sessions', { account: other.accountId, allowed_origins: [ORIGIN] }), 'account_mismatch');
      const own = await h.api('POST', '/v1/portal-sessions', { account: h.accountId, allowed_origins: [ORIGIN] });
      assert.equal(own.status, 201);
      assertProblem(await h.call('POST', '/v1/portal-sessions', { body: { allowed_origins: [ORIGIN] } }), 'unauthorized');

      // A person signed in to the panel cannot make one: links are the platform backend's, made with its key.
      const user = await createUser(h.db, h.deps.passwords, h.accountId, { email: 'ada@acme.example', name: 'Ada', password: 'correct horse battery staple' });
      const { token } = await startSession(h.db, user.id, h.clock.now(), DEFAULT_PANEL_AUTH);
      const fromPanel = await h.call('POST', '/v1/portal-sessions', {
        body: { allowed_origins: [ORIGIN] },
        headers: { cookie: `herald_session=${token}`, 'x-csrf-token': csrfTokenFor(token) },
      });
      assertProblem(fromPanel, 'api_key_required');
    });

    test('a link opens once: the panel framed by exactly its origins, then a page saying it was used', async () => {
      const made = await link({ allowed_origins: [ORIGIN, 'https://other.example:8443'], logo_url: 'https://cdn.example.com/a/logo.png' });
      // A HEAD (a link checker) does not use it up.
      const head = await h.app.inject({ method: 'HEAD', url: pathOf(made.url), headers: html });
      assert.notEqual(head.statusCode, 410);
      const first = await open(made.url);
      assert.equal(first.res.statusCode, 200);
      assert.ok(first.token, 'the page carries the session token');
      const csp = String(first.res.headers['content-security-policy']);
      assert.match(csp, /(^|; )frame-ancestors https:\/\/app\.logistics\.example https:\/\/other\.example:8443(;|$)/);
      assert.match(csp, /img-src 'self' https:\/\/cdn\.example\.com(;|$)/);
      assert.doesNotMatch(csp, /unsafe-inline|\*/);
      assert.equal(first.res.headers['x-frame-options'], undefined);
      assert.equal(first.res.headers['cache-control'], 'no-store');
      assert.equal(first.res.headers['referrer-policy'], 'no-referrer');

      const second = await open(made.url);
      assert.equal(second.res.statusCode, 410);
      assert.equal(second.token, undefined);
      assert.match(second.res.body, /already used/);
      assert.match(String(second.res.headers['content-security-policy']), /frame-ancestors https:\/\/app\.logistics\.example https:\/\/other\.example:8443$/);

      // Two opens at once: exactly one session.
      const raced = await link();
      const both = await Promise.all([open(raced.url), open(raced.url)]);
      assert.deepEqual(both.map((b) => b.res.statusCode).sort(), [200, 410]);

      const bogus = await h.app.inject({ url: '/portal/hpl_' + 'A'.repeat(43), headers: html });
      assert.equal(bogus.statusCode, 404);
      assert.match(String(bogus.headers['content-security-policy']), /frame-ancestors 'none'/);

      // The panel's own pages still refuse every frame.
      const normal = await h.app.inject({ url: '/settings/webhooks', headers: html });
      assert.equal(normal.headers['content-security-policy'], PANEL_CSP);
      assert.equal(normal.headers['x-frame-options'], 'DENY');
    });

    test('a link expires unopened, and the session it opens ends on time (the clock, not a wait)', async () => {
      const made = await link({ expires_in_minutes: 2, session_minutes: 30 });
      h.clock.advance(2 * 60_000);
      const late = await open(made.url);
      assert.equal(late.res.statusCode, 410);
      assert.match(late.res.body, /expired/);

      const fresh = await link({ expires_in_minutes: 2, session_minutes: 30 });
      h.clock.advance(2 * 60_000 - 1);
      const { token } = await open(fresh.url);
      assert.ok(token);
      const me = await h.api('GET', '/v1/portal-session', undefined, token);
      assert.equal(me.status, 200);
      assert.equal(me.json.expires_at, new Date(h.clock.now().getTime() + 30 * 60_000).toISOString());
      h.clock.advance(30 * 60_000 - 1);
      assert.equal((await h.api('GET', '/v1/endpoints', undefined, token)).status, 200);
      h.clock.advance(1);
      assertProblem(await h.api('GET', '/v1/endpoints', undefined, token), 'unauthorized');
    });

    test('a portal session sees its own account only, and none of the API keys, publishing or links', async () => {
      const other = await h.newAccount('Other Freight');
      const theirs = await h.api('POST', '/v1/endpoints', { url: 'https://theirs.example.com/hook', event_types: ['alarm.created'] }, other.apiKey);
      const mine = await h.api('POST', '/v1/endpoints', { url: 'https://mine.example.com/hook', event_types: ['alarm.created'] });
      const { token } = await open((await link({}, other.apiKey)).url);
      assert.ok(token);

      const me = await h.api('GET', '/v1/portal-session', undefined, token);
      assert.deepEqual(me.json.account, { id: other.accountId, name: 'Other Freight' });
      assert.equal(me.json.read_only, false);
      const list = await h.api('GET', '/v1/endpoints', undefined, token);
      assert.deepEqual(list.json.data.map((e: { id: string }) => e.id), [theirs.json.id]);
      assertProblem(await h.api('GET', `/v1/endpoints/${mine.json.id}`, undefined, token), 'not_found');
      assertProblem(await h.api('DELETE', `/v1/endpoints/${mine.json.id}`, undefined, token), 'not_found');

      assertProblem(await h.api('GET', '/v1/api-keys', undefined, token), 'not_in_portal');
      assertProblem(await h.api('POST', '/v1/api-keys', { name: 'sneaky' }, token), 'not_in_portal');
      assertProblem(await h.api('POST', '/v1/events', { type: 'alarm.created', data: alarmData() }, token), 'not_in_portal');
      assertProblem(await h.api('POST', '/v1/portal-sessions', { allowed_origins: [ORIGIN] }, token), 'not_in_portal');

      // It can do what the panel does for the account.
      const made = await h.api('POST', '/v1/endpoints', { url: 'https://new.example.com/hook', event_types: ['alarm.created'] }, token);
      assert.equal(made.status, 201);
      assert.equal((await h.api('GET', `/v1/endpoints/${made.json.id}`, undefined, other.apiKey)).status, 200);
      assert.equal((await h.api('GET', '/v1/event-types', undefined, token)).status, 200);

      // Disabling by hand records the embedded panel as who did it; replays stay out.
      const disabled = await h.api('POST', `/v1/endpoints/${made.json.id}/disable`, { reason: 'maintenance' }, token);
      assert.equal(disabled.status, 200);
      assert.deepEqual(disabled.json.disabled_by, { type: 'portal', id: me.json.id, name: 'the embedded panel' });
      assertProblem(await h.api('POST', '/v1/replays', { event_ids: [randomUUID()] }, token), 'not_in_portal');
    });

    test('a read-only session changes nothing: every change is refused with read_only_session', async () => {
      const endpoint = await h.api('POST', '/v1/endpoints', { url: 'https://ro.example.com/hook', event_types: ['alarm.created'] });
      const event = await h.api('POST', '/v1/events', { type: 'alarm.created', data: alarmData() });
      const { token } = await open((await link({ read_only: true })).url);
      assert.ok(token);
      const id = endpoint.json.id;
      const changes: Array<[string, string, unknown?]> = [
        ['POST', '/v1/endpoints', { url: 'https://x.example.com/hook', event_types: ['alarm.created'] }],
        ['PATCH', `/v1/endpoints/${id}`, { description: 'changed' }],
        ['DELETE', `/v1/endpoints/${id}`],
        ['POST', `/v1/endpoints/${id}/rotate-secret`, {}],
        ['POST', `/v1/endpoints/${id}/test`, { event_type: 'alarm.created' }],
        ['POST', `/v1/endpoints/${id}/disable`],
        ['POST', `/v1/endpoints/${id}/enable`],
        ['POST', `/v1/endpoints/${id}/recover`, { since: h.clock.now().toISOString() }],
        ['POST', `/v1/events/${event.json.id}/redeliver`, {}],
        ['POST', '/v1/api-keys', {}],
        ['POST', '/v1/portal-sessions', { allowed_origins: [ORIGIN] }],
      ];
      for (const [method, url, body] of changes) assertProblem(await h.api(method, url, body, token), 'read_only_session');
      assert.equal((await h.api('GET', `/v1/endpoints/${id}`)).json.description, endpoint.json.description);
      assert.equal((await h.api('GET', `/v1/endpoints/${id}`, undefined, token)).status, 200);
      assert.equal((await h.api('GET', `/v1/endpoints/${id}/attempts`, undefined, token)).status, 200);
      assert.equal((await h.api('GET', '/v1/portal-session', undefined, token)).json.read_only, true);

      // Signing out is allowed, and ends the session at once.
      assert.equal((await h.api('DELETE', '/v1/portal-session', undefined, token)).status, 204);
      assertProblem(await h.api('GET', '/v1/endpoints', undefined, token), 'unauthorized');
    });

    test('neither the link nor the session token reaches a log line', async () => {
      const made = await link();
      const { token } = await open(made.url);
      assert.ok(token);
      await h.api('GET', '/v1/endpoints', undefined, token);
      await open(made.url);
      const logs = h.logs();
      const linkToken = pathOf(made.url).split('/').pop()!;
      assert.ok(!logs.includes(linkToken), 'the link token is not logged');
      assert.ok(!logs.includes(token), 'the session token is not logged');
      assert.match(logs, /\/portal\/\[redacted\]/);
    });
  });
}
