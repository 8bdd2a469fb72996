import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cleanEnv, runCli, startHerald, type RunningHerald } from './helpers/cli.ts';
import { createScratchPostgres } from './helpers/engines.ts';
import { alarmData } from './helpers/herald.ts';

async function call(base: string, method: string, path: string, key: string, body?: unknown) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

/** The operator's path: create an account and a key with the CLI, then use the key on the running API. */
function operatorScenario(setup: () => { herald: RunningHerald; cli: (args: string[], input?: string) => ReturnType<typeof runCli>; tmp: string }) {
  let accountId: string;
  let key: string;
  let keyId: string;

  test('accounts create prints the new account; accounts list shows it', async () => {
    const { cli } = setup();
    const created = await cli(['--json', 'accounts', 'create', '--name', 'Acme Logistics']);
    assert.equal(created.code, 0, created.stderr);
    const account = JSON.parse(created.stdout);
    assert.equal(account.name, 'Acme Logistics');
    accountId = account.id;

    const plain = await cli(['accounts', 'list']);
    assert.equal(plain.code, 0, plain.stderr);
    assert.match(plain.stdout, new RegExp(`${accountId}  Acme Logistics`));
    // Every list, the API's and the operator commands', has one shape.
    const page = JSON.parse((await cli(['--json', 'accounts', 'list'])).stdout);
    assert.deepEqual(Object.keys(page).sort(), ['data', 'next_cursor']);
    assert.equal(page.next_cursor, null);
    assert.ok(page.data.some((a: { id: string; name: string }) => a.id === accountId && a.name === 'Acme Logistics'));
  });

  test('keys create prints the key once; it works against the running API at once', async () => {
    const { cli, herald } = setup();
    const created = await cli(['--json', 'keys', 'create', '--account', accountId, '--name', 'ci']);
    assert.equal(created.code, 0, created.stderr);
    const result = JSON.parse(created.stdout);
    key = result.key;
    keyId = result.id;
    assert.match(key, /^hk_[A-Za-z0-9]{8}_[A-Za-z0-9_-]{32}$/);

    const list = await call(herald.url, 'GET', '/v1/endpoints', key);
    assert.equal(list.status, 200);
    assert.deepEqual(list.json, { data: [], next_cursor: null });
    const endpoint = await call(herald.url, 'POST', '/v1/endpoints', key, { url: 'https://hooks.example.com/herald', event_types: ['alarm.created'] });
    assert.equal(endpoint.status, 201);
    const event = await call(herald.url, 'POST', '/v1/events', key, { type: 'alarm.created', data: alarmData() });
    assert.equal(event.status, 202);
    const got = await call(herald.url, 'GET', `/v1/events/${event.json.id}`, key);
    assert.equal(got.json.deliveries.length, 1);

    const keys = await cli(['keys', 'list', '--account', accountId]);
    assert.equal(keys.code, 0, keys.stderr);
    assert.match(keys.stdout, new RegExp(`${keyId}  ${key.slice(0, 11)}  ci`));
    assert.ok(!keys.stdout.includes(key), 'the key itself is never listed');
    const page = JSON.parse((await cli(['--json', 'keys', 'list', '--account', accountId])).stdout);
    assert.deepEqual(page, { data: [{ ...page.data[0], id: keyId, name: 'ci' }], next_cursor: null });
  });

  test('event-types add puts a type in the running catalog', async () => {
    const { cli, herald, tmp } = setup();
    const schema = join(tmp, 'container-sealed.json');
    writeFileSync(schema, JSON.stringify({ type: 'object', required: ['seal'], properties: { seal: { type: 'string' } } }));
    const added = await cli(['event-types', 'add', 'container.sealed', '--description', 'A container was sealed', '--schema', schema]);
    assert.equal(added.code, 0, added.stderr);
    const listed = await cli(['event-types', 'list']);
    assert.match(listed.stdout, /container\.sealed {2}A container was sealed/);
    assert.match(listed.stdout, /alarm\.created {2}\(built in\)/);
    const page = JSON.parse((await cli(['--json', 'event-types', 'list'])).stdout);
    assert.equal(page.next_cursor, null);
    assert.ok(page.data.some((t: { name: string }) => t.name === 'container.sealed'));

    const ok = await call(herald.url, 'POST', '/v1/events', key, { type: 'container.sealed', data: { seal: 'S-1' } });
    assert.equal(ok.status, 202);
    const bad = await call(herald.url, 'POST', '/v1/events', key, { type: 'container.sealed', data: {} });
    assert.equal(bad.status, 400);
    assert.equal(bad.json.errors[0].field, 'data.seal');

    const again = await cli(['event-types', 'add', 'container.sealed']);
    assert.notEqual(again.code, 0);
    assert.match(again.stderr, /already exists/);
  });

  test('errors say what to fix and exit non-zero', async () => {
    const { cli } = setup();
    const noAccount = await cli(['keys', 'create', '--account', '00000000-0000-4000-8000-000000000000']);
    assert.notEqual(noAccount.code, 0);
    assert.match(noAccount.stderr, /herald: no account with id .*herald accounts list/);
    // Listing by an account that is not there, or by something that is not an id, says the same (it was a database error).
    for (const args of [
      ['keys', 'list', '--account', 'acme'],
      ['keys', 'list', '--account', '00000000-0000-4000-8000-000000000000'],
      ['users', 'list', '--account', 'acme'],
    ]) {
      const res = await cli(args);
      assert.notEqual(res.code, 0, args.join(' '));
      assert.match(res.stderr, /^herald: no account with id (acme|00000000-0000-4000-8000-000000000000); list accounts with: herald accounts list\n$/, args.join(' '));
    }
    const noName = await cli(['accounts', 'create']);
    assert.notEqual(noName.code, 0);
    assert.match(noName.stderr, /--name/);
    const badType = await cli(['event-types', 'add', 'Container Sealed']);
    assert.notEqual(badType.code, 0);
    assert.match(badType.stderr, /lowercase dotted words/);
  });

  test('keys revoke takes effect on the running API at once', async () => {
    const { cli, herald } = setup();
    const revoked = await cli(['keys', 'revoke', key.slice(0, 11)]);
    assert.equal(revoked.code, 0, revoked.stderr);
    assert.match(revoked.stdout, /revoked/);
    const res = await call(herald.url, 'GET', '/v1/endpoints', key);
    assert.equal(res.status, 401);
    assert.equal(res.json.code, 'unauthorized');
  });
}

async function signIn(base: string, email: string, password: string) {
  const res = await fetch(`${base}/v1/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password }) });
  const cookie = res.headers.getSetCookie()[0]?.split(';')[0];
  return { status: res.status, cookie };
}

async function sessionWorks(base: string, cookie: string | undefined) {
  return (await fetch(`${base}/v1/endpoints`, { headers: cookie ? { cookie } : {} })).status === 200;
}

/** Panel users, managed by the operator from the CLI, sign in to the running API at once. */
function usersScenario(setup: () => { herald: RunningHerald; cli: (args: string[], input?: string) => ReturnType<typeof runCli> }) {
  const email = `grace.${randomBytes(4).toString('hex')}@acme.example`;
  let accountId: string;
  let cookie: string | undefined;

  test('users create --password-stdin: the user signs in to the panel at once; users list shows them, never a password', async () => {
    const { cli, herald } = setup();
    accountId = JSON.parse((await cli(['--json', 'accounts', 'create', '--name', 'Users Ltd'])).stdout).id;
    const tooShort = await cli(['users', 'create', '--account', accountId, '--email', email, '--name', 'Grace Hopper', '--password-stdin'], 'short\n');
    assert.equal(tooShort.code, 1);
    assert.match(tooShort.stderr, /password: must be at least 12 characters/);
    assert.doesNotMatch(tooShort.stderr, /short/);

    const created = await cli(['users', 'create', '--account', accountId, '--email', email, '--name', 'Grace Hopper', '--password-stdin'], 'a long enough passphrase\n');
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.stdout, new RegExp(`${email}  Grace Hopper  \\(account ${accountId}\\)`));
    assert.doesNotMatch(created.stdout, /passphrase|Generated password/);

    const again = await cli(['users', 'create', '--account', accountId, '--email', email.toUpperCase(), '--name', 'Grace', '--password-stdin'], 'a long enough passphrase');
    assert.equal(again.code, 1);
    assert.match(again.stderr, /already exists/);

    assert.equal((await signIn(herald.url, email, 'a long enough passphrase\n')).status, 401, 'the final newline of stdin is not part of the password');
    const signedIn = await signIn(herald.url, email, 'a long enough passphrase');
    assert.equal(signedIn.status, 200);
    cookie = signedIn.cookie;
    assert.ok(await sessionWorks(herald.url, cookie));

    const list = await cli(['--json', 'users', 'list', '--account', accountId]);
    assert.equal(list.code, 0, list.stderr);
    const { data: users, next_cursor } = JSON.parse(list.stdout);
    assert.equal(next_cursor, null);
    assert.deepEqual(users.map((u: { email: string }) => u.email), [email]);
    assert.deepEqual(Object.keys(users[0]).sort(), ['account_id', 'created_at', 'email', 'id', 'name']);
  });

  test('users set-password generates one, shown once, and ends the user\u2019s sessions; users delete signs them out everywhere', async () => {
    const { cli, herald } = setup();
    const reset = await cli(['--json', 'users', 'set-password', email]);
    assert.equal(reset.code, 0, reset.stderr);
    const { password } = JSON.parse(reset.stdout);
    assert.match(password, /^[A-Za-z0-9_-]{20}$/);
    assert.equal(await sessionWorks(herald.url, cookie), false, 'the old session ended');
    assert.equal((await signIn(herald.url, email, 'a long enough passphrase')).status, 401);
    const fresh = await signIn(herald.url, email, password);
    assert.equal(fresh.status, 200);

    const deleted = await cli(['users', 'delete', email]);
    assert.equal(deleted.code, 0, deleted.stderr);
    assert.match(deleted.stdout, /deleted; signed out everywhere/);
    assert.equal(await sessionWorks(herald.url, fresh.cookie), false);
    const gone = await cli(['users', 'delete', email]);
    assert.equal(gone.code, 1);
    assert.match(gone.stderr, /no user with id or email/);
  });
}

describe('CLI operator commands reach a running Herald on the embedded database through its admin socket', () => {
  let dir: string;
  let herald: RunningHerald;
  const cli = (args: string[], input?: string) => runCli([...args, '--data-dir', dir], cleanEnv(), input);
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'herald-cli-'));
    herald = await startHerald(['--data-dir', dir]);
  });
  after(async () => {
    await herald?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  operatorScenario(() => ({ herald, cli, tmp: dir }));
  usersScenario(() => ({ herald, cli }));

  test('HERALD_DATA_DIR works as well as --data-dir', async () => {
    const res = await runCli(['accounts', 'list'], cleanEnv({ HERALD_DATA_DIR: dir }));
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stdout, /Acme Logistics/);
  });
});

describe('CLI operator commands on an embedded database that no Herald holds', () => {
  test('run on the database directly; a Herald started afterwards sees the account and key', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'herald-cli-'));
    try {
      const account = await runCli(['--json', 'accounts', 'create', '--name', 'Offline Co', '--data-dir', dir]);
      assert.equal(account.code, 0, account.stderr);
      const { id } = JSON.parse(account.stdout);
      const key = await runCli(['--json', 'keys', 'create', '--account', id, '--data-dir', dir]);
      assert.equal(key.code, 0, key.stderr);
      const herald = await startHerald(['--data-dir', dir]);
      try {
        assert.equal((await call(herald.url, 'GET', '/v1/endpoints', JSON.parse(key.stdout).key)).status, 200);
      } finally {
        assert.equal(await herald.stop(), 0);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('CLI operator commands on PostgreSQL while Herald runs on it', { skip: !process.env.HERALD_TEST_DATABASE_URL && 'HERALD_TEST_DATABASE_URL is not set' }, () => {
  let scratch: { url: string; drop(): Promise<void> };
  let herald: RunningHerald;
  let env: NodeJS.ProcessEnv;
  let tmp: string;
  before(async () => {
    scratch = await createScratchPostgres();
    tmp = mkdtempSync(join(tmpdir(), 'herald-cli-pg-'));
    env = cleanEnv({ DATABASE_URL: scratch.url, HERALD_ENCRYPTION_KEY: randomBytes(32).toString('base64'), HERALD_DATA_DIR: join(tmp, 'unused') });
    herald = await startHerald([], env);
  });
  after(async () => {
    await herald?.stop();
    await scratch?.drop();
    rmSync(tmp, { recursive: true, force: true });
  });

  operatorScenario(() => ({ herald, cli: (args) => runCli(args, env), tmp }));
  usersScenario(() => ({ herald, cli: (args, input) => runCli(args, env, input) }));

  test('without HERALD_ENCRYPTION_KEY, start is refused naming the setting', async () => {
    const res = await runCli(['start', '--port', '0'], cleanEnv({ DATABASE_URL: scratch.url }));
    assert.notEqual(res.code, 0);
    assert.match(res.stderr, /herald: HERALD_ENCRYPTION_KEY: is required with DATABASE_URL/);
  });
});
