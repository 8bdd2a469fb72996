import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_PANEL_AUTH, DEFAULT_RETENTION } from '../src/config.ts';
import { PasswordHasher } from '../src/core/passwords.ts';
import { LoginLimiter } from '../src/http/login-limiter.ts';
import { createMaintainer } from '../src/maintenance/maintainer.ts';
import { OPERATOR_OPS } from '../src/services/operator.ts';
import { createUser, deleteUser } from '../src/services/users.ts';
import { ENGINES } from './helpers/engines.ts';
import { createTestHerald, type TestHerald } from './helpers/herald.ts';

/**
 * Panel sign-in against the real API (inject) on both engines: first-run
 * setup, sessions, CSRF, expiry, the sign-in limiter, and that passwords and
 * tokens never leave Herald.
 */

const first = { account_name: 'Acme Logistics', name: 'Ada Lovelace', email: 'ada@acme.example', password: 'correct horse battery staple' };
const HOST = 'herald.test';

/** The `name=value` part of the session cookie a response set. */
function sessionCookieOf(res: { cookies: Array<{ name: string; value: string }> }): string {
  const cookie = res.cookies.find((c) => c.name.endsWith('herald_session'));
  assert.ok(cookie, 'a session cookie is set');
  return `${cookie.name}=${cookie.value}`;
}

test('passwords are hashed with scrypt and a random salt; the hash carries its parameters', async () => {
  const passwords = new PasswordHasher();
  const a = await passwords.hash('correct horse battery staple');
  const b = await passwords.hash('correct horse battery staple');
  assert.match(a, /^scrypt\$15\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
  assert.notEqual(a, b, 'salted');
  assert.equal(await passwords.verify('correct horse battery staple', a), true);
  assert.equal(await passwords.verify('correct horse battery stapl', a), false);
  assert.equal(await passwords.verify('anything', 'bcrypt$whatever'), false);
});

test('hashing runs a few at a time and refuses at once past a short queue', async () => {
  const passwords = new PasswordHasher({ concurrency: 2, queue: 3 });
  const stored = await passwords.hash('correct horse battery staple');
  const results = await Promise.allSettled(Array.from({ length: 8 }, () => passwords.verify('wrong', stored)));
  assert.equal(passwords.peak, 2);
  assert.deepEqual(results.map((r) => r.status), ['fulfilled', 'fulfilled', 'fulfilled', 'fulfilled', 'fulfilled', 'rejected', 'rejected', 'rejected']);
  assert.equal(((results[7] as PromiseRejectedResult).reason as { code: string }).code, 'busy');
  // Once the queue has drained, hashing takes work again.
  assert.equal(await passwords.verify('correct horse battery staple', stored), true);
});

for (const engine of ENGINES) {
  describe(`panel sign-in [${engine}]`, () => {
    let h: TestHerald;
    let cookie: string;
    let csrf: string;
    const asPanel = (extra: Record<string, string> = {}) => ({ host: HOST, cookie, ...extra });

    before(async () => {
      h = await createTestHerald(engine);
    });
    after(async () => {
      await h.close();
    });

    test('first run: setup is offered while there is no user, needs the setup token Herald printed, and validates every field', async () => {
      assert.deepEqual((await h.call('GET', '/v1/setup')).json, { needed: true });
      const token = h.setupToken.value;
      assert.match(token, /^[A-Za-z0-9_-]{43}$/, '256 random bits');

      // No header makes a request local: from this machine, through a proxy or not, the token is what counts.
      for (const [what, options] of [
        ['from this machine', {}],
        ['with a header no proxy check knew', { headers: { 'true-client-ip': '127.0.0.1' } }],
        ['from another machine', { remoteAddress: '203.0.113.9' }],
      ] as const) {
        const res = await h.call('POST', '/v1/setup', { body: first, ...options });
        assert.equal(res.status, 403, what);
        assert.equal(res.json.code, 'setup_token_required');
        assert.match(res.json.detail, /setup link Herald printed on its console/);
        assert.match(res.json.detail, /herald users create/);
      }
      const wrong = await h.call('POST', '/v1/setup', { body: { ...first, setup_token: token.replace(/^./, token.startsWith('A') ? 'B' : 'A') } });
      assert.equal(wrong.status, 403);
      assert.equal(wrong.json.code, 'setup_token_invalid');
      assert.match(wrong.json.detail, /herald users create/);

      const bad = await h.call('POST', '/v1/setup', { body: { account_name: ' ', name: 'Ada', email: 'not an email', password: 'short', setup_token: token } });
      assert.equal(bad.status, 400);
      assert.deepEqual(bad.json.errors.map((e: { field: string }) => e.field), ['account_name', 'email', 'password']);
      assert.doesNotMatch(JSON.stringify(bad.json), /short/, 'the password is not echoed');

      const missing = await h.call('POST', '/v1/setup', { body: { email: 'ada@acme.example' } });
      assert.equal(missing.status, 400);
      assert.equal(missing.json.code, 'validation_failed');
      assert.deepEqual((await h.call('GET', '/v1/setup')).json, { needed: true }, 'nothing was created');
      assert.ok(!h.logs().includes(token), 'the token is not logged');
    });

    test('a user made another way (herald users create, another process) ends setup: the unused link is refused and stays dead', async () => {
      for (const how of ['herald users create', 'another process'] as const) {
        const fresh = await createTestHerald(engine);
        try {
          const setup_token = fresh.setupToken.value;
          const made =
            how === 'herald users create'
              ? // What the admin socket runs for the CLI while Herald runs.
                await OPERATOR_OPS['users.create'](fresh.deps, { account: fresh.accountId, email: 'ops@acme.example', name: 'Ops', password: first.password })
              : await createUser(fresh.db, fresh.deps.passwords, fresh.accountId, { email: 'ops@acme.example', name: 'Ops', password: first.password });
          const refused = await fresh.call('POST', '/v1/setup', { body: { ...first, setup_token } });
          assert.equal(refused.status, 409, how);
          assert.equal(refused.json.code, 'setup_done');
          assert.equal(fresh.setupToken.matches(setup_token), false, `${how}: spent`);

          // Every user deleted later: the link printed before any user existed still opens nothing.
          await deleteUser(fresh.db, (made as { id: string }).id);
          assert.deepEqual((await fresh.call('GET', '/v1/setup')).json, { needed: true });
          const later = await fresh.call('POST', '/v1/setup', { body: { ...first, setup_token } });
          assert.equal(later.status, 403, how);
          assert.equal(later.json.code, 'setup_token_invalid');
          assert.equal((await fresh.db.query('SELECT 1 FROM users')).rows.length, 0, 'no user was made');
        } finally {
          await fresh.close();
        }
      }
    });

    test('setup creates the account and its first user and signs in; only once, even when two race', async () => {
      const setup_token = h.setupToken.value;
      const [a, b] = await Promise.all([
        h.call('POST', '/v1/setup', { body: { ...first, setup_token }, remoteAddress: '203.0.113.9' }),
        h.call('POST', '/v1/setup', { body: { ...first, email: 'eve@acme.example', setup_token } }),
      ]);
      const statuses = [a.status, b.status].sort();
      assert.deepEqual(statuses, [201, 409]);
      const won = a.status === 201 ? a : b;
      const lost = a.status === 201 ? b : a;
      assert.equal(lost.json.code, 'setup_done');
      assert.equal(won.json.account.name, 'Acme Logistics');
      assert.equal(won.json.user.name, 'Ada Lovelace');
      assert.match(won.json.csrf_token, /^[A-Za-z0-9_-]{43}$/);
      assert.equal(won.headers['cache-control'], 'no-store');
      assert.deepEqual((await h.call('GET', '/v1/setup')).json, { needed: false });
      // Done: the token opens nothing any more.
      const again = await h.call('POST', '/v1/setup', { body: { ...first, setup_token } });
      assert.equal(again.status, 409);
      assert.equal(again.json.code, 'setup_done');
      assert.equal(h.setupToken.matches(setup_token), false, 'spent');
      const users = await h.db.query<{ email: string; password_hash: string }>('SELECT email, password_hash FROM users');
      assert.equal(users.rows.length, 1);
      assert.ok(!users.rows[0]!.password_hash.includes(first.password));
    });

    test('sign-in sets an HttpOnly, SameSite=Lax cookie, not Secure over plain http; wrong email and wrong password get one answer', async () => {
      const wrongPassword = await h.call('POST', '/v1/session', { body: { email: first.email, password: 'not the password' } });
      const wrongEmail = await h.call('POST', '/v1/session', { body: { email: 'nobody@acme.example', password: first.password } });
      for (const res of [wrongPassword, wrongEmail]) {
        assert.equal(res.status, 401);
        assert.equal(res.json.code, 'invalid_credentials');
        assert.equal(res.cookies.length, 0);
      }
      assert.equal(wrongPassword.json.detail, wrongEmail.json.detail);

      // Email is matched without regard to case or surrounding spaces.
      const res = await h.call('POST', '/v1/session', { body: { email: ' ADA@acme.example ', password: first.password }, headers: { host: HOST } });
      assert.equal(res.status, 200);
      const set = res.cookies.find((c) => c.name === 'herald_session')!;
      assert.equal(set.httpOnly, true);
      assert.equal(set.sameSite, 'Lax');
      assert.equal(set.path, '/');
      assert.equal(set.secure, undefined);
      assert.equal(set.maxAge, DEFAULT_PANEL_AUTH.sessionMaxMs / 1000);
      cookie = sessionCookieOf(res);
      csrf = res.json.csrf_token;

      const me = await h.call('GET', '/v1/session', { headers: asPanel() });
      assert.equal(me.status, 200);
      assert.equal(me.json.user.email, first.email);
      assert.equal(me.json.csrf_token, csrf);
    });

    test('behind TLS the cookie is __Host-herald_session and Secure; HERALD_COOKIE_SECURE=always forces it', async () => {
      const res = await h.call('POST', '/v1/session', { body: { email: first.email, password: first.password }, headers: { 'x-forwarded-proto': 'https' } });
      const set = res.cookies.find((c) => c.name === '__Host-herald_session')!;
      assert.equal(set.secure, true);
      assert.equal(set.httpOnly, true);
      assert.equal((await h.call('GET', '/v1/session', { headers: { cookie: sessionCookieOf(res) } })).status, 200);

      const forced = await createTestHerald(engine, { panelAuth: { cookieSecure: 'always' } });
      try {
        await createUser(forced.db, forced.deps.passwords, forced.accountId, { email: 'bob@acme.example', name: 'Bob', password: first.password });
        const signed = await forced.call('POST', '/v1/session', { body: { email: 'bob@acme.example', password: first.password } });
        assert.equal(signed.cookies.find((c) => c.name === '__Host-herald_session')?.secure, true);
      } finally {
        await forced.close();
      }
    });

    test('the session works on every API route; a change needs the CSRF token and the same origin', async () => {
      const list = await h.call('GET', '/v1/endpoints', { headers: asPanel() });
      assert.equal(list.status, 200);
      const body = { url: 'https://hooks.acme.example/herald', event_types: ['alarm.created'] };

      const noToken = await h.call('POST', '/v1/endpoints', { body, headers: asPanel() });
      assert.equal(noToken.status, 403);
      assert.equal(noToken.json.code, 'csrf_failed');
      assert.match(noToken.json.detail, /X-CSRF-Token/);
      const wrongToken = await h.call('POST', '/v1/endpoints', { body, headers: asPanel({ 'x-csrf-token': csrf.replace(/.$/, csrf.endsWith('A') ? 'B' : 'A') }) });
      assert.equal(wrongToken.status, 403);
      const otherSite = await h.call('POST', '/v1/endpoints', { body, headers: asPanel({ 'x-csrf-token': csrf, origin: 'https://evil.example' }) });
      assert.equal(otherSite.status, 403);
      assert.match(otherSite.json.detail, /evil\.example/);
      const crossSite = await h.call('POST', '/v1/endpoints', { body, headers: asPanel({ 'x-csrf-token': csrf, 'sec-fetch-site': 'cross-site' }) });
      assert.equal(crossSite.status, 403);
      const setupUser = (await h.db.query<{ account_id: string }>('SELECT account_id FROM users')).rows[0]!;
      assert.equal((await h.db.query('SELECT 1 FROM endpoints WHERE account_id = $1', [setupUser.account_id])).rows.length, 0, 'nothing was created');

      const created = await h.call('POST', '/v1/endpoints', { body, headers: asPanel({ 'x-csrf-token': csrf, origin: `http://${HOST}`, 'sec-fetch-site': 'same-origin' }) });
      assert.equal(created.status, 201);
      assert.match(created.json.secret, /^whsec_/);
      const got = await h.call('GET', `/v1/endpoints/${created.json.id}`, { headers: asPanel() });
      assert.equal(got.status, 200);

      // The user sees their own account only: the test account's key sees nothing of it, and the reverse.
      assert.equal((await h.api('GET', `/v1/endpoints/${created.json.id}`)).status, 404);
      const theirs = (await h.api('POST', '/v1/endpoints', body)).json;
      assert.equal((await h.call('GET', `/v1/endpoints/${theirs.id}`, { headers: asPanel() })).status, 404);

      // An API key wins over the cookie when both are sent.
      const both = await h.call('GET', `/v1/endpoints/${theirs.id}`, { headers: asPanel({ authorization: `Bearer ${h.apiKey}` }) });
      assert.equal(both.status, 200);
    });

    test('Idempotency-Key and rate limits work for a panel session as for a key', async () => {
      const headers = asPanel({ 'x-csrf-token': csrf, 'idempotency-key': 'panel-1' });
      const body = { url: 'https://hooks.acme.example/idem', event_types: ['alarm.created'] };
      const one = await h.call('POST', '/v1/endpoints', { body, headers });
      const two = await h.call('POST', '/v1/endpoints', { body, headers });
      assert.equal(one.status, 201);
      assert.equal(two.headers['idempotent-replayed'], 'true');
      assert.equal(two.json.id, one.json.id);

      const limited = await createTestHerald(engine, { rateLimits: { managementPerMinute: 2 } });
      try {
        await createUser(limited.db, limited.deps.passwords, limited.accountId, { email: 'bob@acme.example', name: 'Bob', password: first.password });
        const signed = await limited.call('POST', '/v1/session', { body: { email: 'bob@acme.example', password: first.password } });
        const panel = { cookie: sessionCookieOf(signed) };
        assert.equal((await limited.call('GET', '/v1/endpoints', { headers: panel })).status, 200);
        const last = await limited.call('GET', '/v1/endpoints', { headers: panel });
        assert.equal(last.headers['ratelimit-remaining'], '0');
        const refused = await limited.call('GET', '/v1/endpoints', { headers: panel });
        assert.equal(refused.status, 429);
        // Counted per user, not per address: the account's key still has its own allowance.
        assert.equal((await limited.api('GET', '/v1/endpoints')).status, 200);
      } finally {
        await limited.close();
      }
    });

    test('sign-out ends the session at once and clears the cookie; the old cookie is refused with a message that says why', async () => {
      const noToken = await h.call('DELETE', '/v1/session', { headers: asPanel() });
      assert.equal(noToken.status, 403, 'signing out is a change too');
      const out = await h.call('DELETE', '/v1/session', { headers: asPanel({ 'x-csrf-token': csrf }) });
      assert.equal(out.status, 204);
      const cleared = out.cookies.find((c) => c.name === 'herald_session')!;
      assert.equal(cleared.value, '');
      assert.ok((cleared.expires as Date).getTime() < Date.now());

      const after = await h.call('GET', '/v1/endpoints', { headers: asPanel() });
      assert.equal(after.status, 401);
      assert.match(after.json.detail, /session has ended/);
      assert.equal((await h.call('GET', '/v1/session', { headers: asPanel() })).status, 401);
      // Signing out again changes nothing.
      assert.equal((await h.call('DELETE', '/v1/session', { headers: asPanel() })).status, 204);
    });

    test('a session ends after the idle timeout, and at its maximum age however much it is used', async () => {
      const signIn = async () => sessionCookieOf(await h.call('POST', '/v1/session', { body: { email: first.email, password: first.password } }));
      const idle = await signIn();
      h.clock.advance(DEFAULT_PANEL_AUTH.sessionIdleMs - 60_000);
      assert.equal((await h.call('GET', '/v1/session', { headers: { cookie: idle } })).status, 200, 'just inside the idle timeout');
      h.clock.advance(DEFAULT_PANEL_AUTH.sessionIdleMs - 60_000);
      assert.equal((await h.call('GET', '/v1/session', { headers: { cookie: idle } })).status, 200, 'the last use kept it alive');
      h.clock.advance(DEFAULT_PANEL_AUTH.sessionIdleMs + 1);
      assert.equal((await h.call('GET', '/v1/session', { headers: { cookie: idle } })).status, 401, 'idle too long');

      const busy = await signIn();
      const step = DEFAULT_PANEL_AUTH.sessionIdleMs / 2;
      for (let used = 0; used + step < DEFAULT_PANEL_AUTH.sessionMaxMs; used += step) {
        h.clock.advance(step);
        assert.equal((await h.call('GET', '/v1/endpoints', { headers: { cookie: busy } })).status, 200);
      }
      h.clock.advance(step);
      assert.equal((await h.call('GET', '/v1/endpoints', { headers: { cookie: busy } })).status, 401, 'past the maximum age');

      // The maintainer sweeps sessions that can no longer be used.
      const maintainer = createMaintainer({
        db: h.db,
        clock: h.clock.now,
        config: { retention: DEFAULT_RETENTION, sessionIdleMs: DEFAULT_PANEL_AUTH.sessionIdleMs },
        log: { info() {}, warn() {}, error() {} },
        onSchemaTooNew() {},
      });
      assert.ok((await maintainer.runOnce()).sweptSessions! >= 2, 'the idle one and the old one');
      await maintainer.stop();
      const left = await h.db.query<{ n: number }>('SELECT count(*)::int AS n FROM sessions WHERE expires_at <= $1', [h.clock.now()]);
      assert.equal(left.rows[0]!.n, 0);
    });

    test('signing in again replaces the browser\u2019s previous session', async () => {
      const firstSignIn = await h.call('POST', '/v1/session', { body: { email: first.email, password: first.password } });
      const old = sessionCookieOf(firstSignIn);
      const second = await h.call('POST', '/v1/session', { body: { email: first.email, password: first.password }, headers: { cookie: old } });
      assert.equal(second.status, 200);
      assert.notEqual(sessionCookieOf(second), old);
      assert.equal((await h.call('GET', '/v1/session', { headers: { cookie: old } })).status, 401);
      assert.equal((await h.call('GET', '/v1/session', { headers: { cookie: sessionCookieOf(second) } })).status, 200);
    });

    test('repeated failures from one address are refused for a while, even with the right password; other addresses are not', async () => {
      const attacker = '198.51.100.7';
      for (let i = 0; i < 10; i++) {
        const res = await h.call('POST', '/v1/session', { body: { email: first.email, password: `guess number ${i}` }, remoteAddress: attacker });
        assert.equal(res.status, 401);
      }
      const locked = await h.call('POST', '/v1/session', { body: { email: first.email, password: first.password }, remoteAddress: attacker });
      assert.equal(locked.status, 429);
      assert.equal(locked.json.code, 'rate_limited');
      assert.equal(locked.headers['retry-after'], '900');
      assert.match(locked.json.detail, /wait 900 s/);

      const elsewhere = await h.call('POST', '/v1/session', { body: { email: first.email, password: first.password }, remoteAddress: '198.51.100.8' });
      assert.equal(elsewhere.status, 200, 'the user is not locked out from their own address');

      h.clock.advance(15 * 60_000);
      const later = await h.call('POST', '/v1/session', { body: { email: first.email, password: first.password }, remoteAddress: attacker });
      assert.equal(later.status, 200);
    });

    test('wrong passwords sent all at once are held to the limit: the rest are refused before their password is checked', async () => {
      const attacker = '198.51.100.20';
      const burst = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          h.call('POST', '/v1/session', { body: { email: first.email, password: i === 39 ? first.password : `guess ${i}` }, remoteAddress: attacker }),
        ),
      );
      const statuses = burst.map((r) => r.status);
      assert.equal(statuses.filter((s) => s === 401).length, 10, 'only the limit were checked');
      assert.equal(statuses.filter((s) => s === 429).length, 30);
      assert.ok(!statuses.includes(200), 'the right password in the burst did not sign in');
      const refused = burst.find((r) => r.status === 429)!;
      assert.equal(refused.json.code, 'rate_limited');
      assert.equal(refused.headers['retry-after'], '900');
      assert.equal((await h.call('POST', '/v1/session', { body: { email: first.email, password: first.password }, remoteAddress: attacker })).status, 429);
    });

    test('a session ends exactly at the idle timeout after its last use, and exactly at its maximum age', async () => {
      const { sessionIdleMs: idle, sessionMaxMs: max } = DEFAULT_PANEL_AUTH;
      const signIn = async () => sessionCookieOf(await h.call('POST', '/v1/session', { body: { email: first.email, password: first.password } }));
      const status = async (cookie: string) => (await h.call('GET', '/v1/session', { headers: { cookie } })).status;

      // Used 30 s after sign-in (well within any once-a-minute bookkeeping), then left alone.
      const kept = await signIn();
      const ended = await signIn();
      h.clock.advance(30_000);
      assert.equal(await status(kept), 200);
      assert.equal(await status(ended), 200);
      h.clock.advance(idle - 1);
      assert.equal(await status(kept), 200, 'one millisecond before the idle timeout');
      h.clock.advance(1);
      assert.equal(await status(ended), 401, 'at the idle timeout');

      const busy = await signIn();
      for (let used = 0; used + idle / 2 < max; used += idle / 2) {
        h.clock.advance(idle / 2);
        assert.equal(await status(busy), 200);
      }
      const left = max - Math.floor((max - 1) / (idle / 2)) * (idle / 2);
      h.clock.advance(left - 1);
      assert.equal(await status(busy), 200, 'one millisecond before the maximum age');
      h.clock.advance(1);
      assert.equal(await status(busy), 401, 'at the maximum age');
    });

    test('passwords, session tokens and CSRF tokens never reach the log, and no response carries a password hash', async () => {
      const res = await h.call('POST', '/v1/session', { body: { email: first.email, password: first.password } });
      const token = sessionCookieOf(res).split('=')[1]!;
      await h.call('GET', '/v1/endpoints', { headers: { cookie: `herald_session=${token}` } });
      await h.call('POST', '/v1/endpoints', { body: {}, headers: { cookie: `herald_session=${token}`, 'x-csrf-token': res.json.csrf_token } });
      const logs = h.logs();
      for (const secret of [first.password, token, res.json.csrf_token]) assert.ok(!logs.includes(secret));
      assert.doesNotMatch(JSON.stringify(res.json), /scrypt|password/);
      const stored = (await h.db.query<{ token_hash: Buffer }>('SELECT token_hash FROM sessions')).rows;
      assert.ok(stored.every((s) => !s.token_hash.toString('utf8').includes(token)), 'only a hash of the token is stored');
    });
  });

  describe(`the sign-in limit per client [${engine}]`, () => {
    const PROXY = '10.0.0.1';
    const WINDOW = 15 * 60_000;
    /** A hasher that can hold the right password's check until released, to drive a sign-in across a window's end. */
    class HeldHasher extends PasswordHasher {
      private gate: { arrived: () => void; opened: Promise<void> } | undefined;
      hold(): { reached: Promise<void>; release: () => void } {
        let arrived!: () => void;
        let release!: () => void;
        const reached = new Promise<void>((resolve) => (arrived = resolve));
        this.gate = { arrived, opened: new Promise<void>((resolve) => (release = resolve)) };
        return { reached, release };
      }
      override async verify(password: string, stored: string): Promise<boolean> {
        const gate = this.gate;
        if (gate && password === first.password) {
          this.gate = undefined;
          gate.arrived();
          await gate.opened;
        }
        return super.verify(password, stored);
      }
    }
    let h: TestHerald;
    let hasher: HeldHasher;
    const signIn = (email: string, password: string, remoteAddress: string, headers: Record<string, string> = {}) =>
      h.call('POST', '/v1/session', { body: { email, password }, remoteAddress, headers });

    before(async () => {
      hasher = new HeldHasher();
      h = await createTestHerald(engine, { passwords: hasher, trustedProxies: [PROXY], loginLimiter: new LoginLimiter({ windowMs: WINDOW, perAddressAndEmail: 10, perAddress: 3 }) });
      await createUser(h.db, h.deps.passwords, h.accountId, { email: first.email, name: first.name, password: first.password });
    });
    after(() => h.close());

    test("a tenant's own sign-ins give back no guesses at other users' passwords, even across a window's end", async () => {
      const tenant = '198.51.100.50';
      const held = hasher.hold();
      const own = signIn(first.email, first.password, tenant);
      await held.reached;
      // The own sign-in's try was held in a window that now ends; a new one starts with 3 guesses.
      h.clock.advance(WINDOW);
      for (let i = 0; i < 3; i++) assert.equal((await signIn(`victim${i}@globex.example`, 'Summer2026!!', tenant)).status, 401);
      held.release();
      assert.equal((await own).status, 200);
      assert.equal((await signIn('victim9@globex.example', 'Summer2026!!', tenant)).status, 429, 'the success gave back no try of the new window');
      // Interleaved successes within a window never lower the count of failures either.
      assert.equal((await signIn(first.email, first.password, tenant)).status, 429);
    });

    test('an IPv6 host is its /64, and a port the proxy appends is not a new client', async () => {
      for (let i = 1; i <= 3; i++) assert.equal((await signIn('victim@globex.example', `guess ${i}`, `2001:db8:5:6::${i}`)).status, 401);
      assert.equal((await signIn('victim@globex.example', 'guess 4', '2001:db8:5:6::99')).status, 429);
      assert.equal((await signIn(first.email, first.password, '2001:db8:5:7::1')).status, 200, 'another /64 signs in');

      const via = (forwarded: string, password: string) => signIn('victim@globex.example', password, PROXY, { 'x-forwarded-for': forwarded });
      for (let i = 1; i <= 3; i++) assert.equal((await via(`203.0.113.10:${5000 + i}`, `guess ${i}`)).status, 401);
      assert.equal((await via('203.0.113.10:6000', 'guess 4')).status, 429);
      assert.equal((await via('[::ffff:203.0.113.10]:6001', 'guess 5')).status, 429);
    });
  });

  describe(`sign-in behind a reverse proxy [${engine}]`, () => {
    const PROXY = '10.0.0.1';
    let h: TestHerald;
    const signIn = (password: string, options: { remoteAddress: string; headers?: Record<string, string> }) =>
      h.call('POST', '/v1/session', { body: { email: first.email, password }, ...options });

    before(async () => {
      h = await createTestHerald(engine, { trustedProxies: [`${PROXY}/32`] });
      await createUser(h.db, h.deps.passwords, h.accountId, { email: first.email, name: first.name, password: first.password });
    });
    after(async () => {
      await h.close();
    });

    test('behind a trusted proxy, wrong passwords from one client do not lock out another', async () => {
      const via = (client: string) => ({ remoteAddress: PROXY, headers: { 'x-forwarded-for': client } });
      // 60 failures through the proxy: past both limits, were they counted for the proxy's address.
      for (let i = 0; i < 6; i++) {
        for (let j = 0; j < 10; j++) assert.equal((await signIn(`guess ${i}.${j}`, via(`203.0.113.${10 + i}`))).status, 401);
        assert.equal((await signIn(first.password, via(`203.0.113.${10 + i}`))).status, 429, 'the guessing client is locked out');
      }
      const other = await signIn(first.password, via('203.0.113.99'));
      assert.equal(other.status, 200, 'another client behind the same proxy signs in');
      // The log names the client, not the proxy.
      assert.match(h.logs(), /"remoteAddress":"203\.0\.113\.99"/);
    });

    test('from a peer that is not a trusted proxy, X-Forwarded-For is ignored', async () => {
      const peer = '198.51.100.40';
      for (let i = 0; i < 10; i++) {
        const res = await signIn(`guess ${i}`, { remoteAddress: peer, headers: { 'x-forwarded-for': `192.0.2.${i}` } });
        assert.equal(res.status, 401);
      }
      const forged = await signIn(first.password, { remoteAddress: peer, headers: { 'x-forwarded-for': '192.0.2.200' } });
      assert.equal(forged.status, 429, 'a new forged address does not start a new count');
    });

    test('without trusted proxies, a forged X-Forwarded-For changes nothing', async () => {
      const plain = await createTestHerald(engine);
      try {
        await createUser(plain.db, plain.deps.passwords, plain.accountId, { email: first.email, name: first.name, password: first.password });
        for (let i = 0; i < 10; i++) {
          const res = await plain.call('POST', '/v1/session', { body: { email: first.email, password: `guess ${i}` }, remoteAddress: '127.0.0.1', headers: { 'x-forwarded-for': `192.0.2.${i}` } });
          assert.equal(res.status, 401);
        }
        const res = await plain.call('POST', '/v1/session', { body: { email: first.email, password: first.password }, remoteAddress: '127.0.0.1', headers: { 'x-forwarded-for': '192.0.2.200' } });
        assert.equal(res.status, 429);
      } finally {
        await plain.close();
      }
    });

    test('the per-client limit of unauthenticated requests counts each client behind a trusted proxy on its own', async () => {
      const limited = await createTestHerald(engine, { trustedProxies: [PROXY], rateLimits: { managementPerMinute: 2 } });
      try {
        const get = (client: string) => limited.call('GET', '/v1/setup', { remoteAddress: PROXY, headers: { 'x-forwarded-for': client } });
        assert.equal((await get('203.0.113.1')).status, 200);
        assert.equal((await get('203.0.113.1')).status, 200);
        assert.equal((await get('203.0.113.1')).status, 429);
        assert.equal((await get('203.0.113.2')).status, 200, 'another client has its own allowance');
      } finally {
        await limited.close();
      }
    });
  });
}
