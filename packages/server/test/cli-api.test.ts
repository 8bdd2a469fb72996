import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { cleanEnv, runCli, type CliResult } from './helpers/cli.ts';
import { ENGINES } from './helpers/engines.ts';
import { alarmData, createTestHerald, type TestHerald } from './helpers/herald.ts';
import { opensslSignature } from './helpers/independent-hmac.ts';
import { startReceiver, type Receiver } from './helpers/receiver.ts';
import { runReplays } from '../src/services/replays.ts';

/** A full signing secret (the masked hint, whsec_abcd…, is shorter). */
const SECRET = /whsec_[A-Za-z0-9_-]{20,}/g;
const SINCE = '2026-11-01T00:00:00Z'; // before the test clock's start

/** A port nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

for (const engine of ENGINES) {
  describe(`herald endpoints|attempts|events through a running API (${engine})`, () => {
    let h: TestHerald;
    let receiver: Receiver;
    let baseUrl: string;
    let endpointId: string;
    let secret: string;

    before(async () => {
      h = await createTestHerald(engine);
      baseUrl = await h.app.listen({ host: '127.0.0.1', port: 0 });
      receiver = await startReceiver();
      receiver.respond({ status: 200 });
    });
    after(async () => {
      await receiver?.close();
      await h?.close();
    });

    /**
     * Runs the CLI against the API with the test account's key (or `env`'s),
     * and checks that no key it was given shows up in what it printed.
     */
    async function cli(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
      const keys = { HERALD_URL: baseUrl, HERALD_API_KEY: h.apiKey, ...env };
      const res = await runCli(args, cleanEnv(keys));
      for (const key of [h.apiKey, keys.HERALD_API_KEY].filter(Boolean)) {
        assert.ok(!res.stdout.includes(key) && !res.stderr.includes(key), `the API key is never printed:\n${res.stdout}\n${res.stderr}`);
      }
      return res;
    }
    const ok = (res: CliResult) => {
      assert.equal(res.code, 0, `exit 0 expected:\n${res.stdout}\n${res.stderr}`);
      return res;
    };
    const json = async (args: string[]) => JSON.parse(ok(await cli(['--json', ...args])).stdout);

    test('without an API key, says which setting is missing and how to create a key', async () => {
      const res = await runCli(['endpoints', 'list'], cleanEnv({ HERALD_URL: baseUrl }));
      assert.equal(res.code, 2, 'a setting is missing: the usage exit code');
      assert.match(res.stderr, /^herald: --api-key \/ HERALD_API_KEY: is required/);
      assert.match(res.stderr, /herald keys create --account <id>/);

      const pasted = await cli(['endpoints', 'list'], { HERALD_API_KEY: `${h.apiKey}\n` });
      assert.equal(pasted.code, 2);
      assert.match(pasted.stderr, /--api-key \/ HERALD_API_KEY: must be the key as printed/);
    });

    test('a problem prints herald: <detail> and each field error, exit 1; --json prints the problem too', async () => {
      const res = await cli(['endpoints', 'create', '--url', 'http://example.com/hook', '--events', 'alarm.created']);
      assert.equal(res.code, 1);
      assert.match(res.stderr, /^herald: url: must use https.*\(400 invalid_url\)$/m);
      assert.equal(res.stdout, '');

      // The body is checked before the endpoint is looked up, so any id shows both field errors.
      const two = await cli(['--json', 'endpoints', 'update', '00000000-0000-4000-8000-000000000000', '--events', '', '--description', 'x'.repeat(501)]);
      assert.equal(two.code, 1);
      const problem = JSON.parse(two.stdout);
      assert.equal(problem.code, 'validation_failed');
      assert.deepEqual(problem.errors.map((e: { field: string }) => e.field).sort(), ['description', 'event_types']);
      assert.match(two.stderr, /^herald: .*\(400 validation_failed\)$/m);
      assert.match(two.stderr, /^  event_types: must NOT have fewer than 1 items$/m);
      assert.match(two.stderr, /^  description: must NOT have more than 500 characters$/m);
    });

    test('create prints the signing secret once, with a "shown once" line', async () => {
      const res = ok(await cli(['endpoints', 'create', '--url', receiver.url, '--events', 'alarm.created', '--description', 'Dispatch desk']));
      assert.match(res.stdout, /shown once/);
      const secrets = res.stdout.match(SECRET) ?? [];
      assert.equal(secrets.length, 1, res.stdout);
      secret = secrets[0]!;
      endpointId = /^id\s+(\S+)$/m.exec(res.stdout)![1]!;
      const got = await h.api('GET', `/v1/endpoints/${endpointId}`);
      assert.equal(got.json.description, 'Dispatch desk');
      assert.ok(secret.startsWith(got.json.secret_hint.replace('…', '')));
    });

    test('create --json prints the API answer, secret included', async () => {
      // Not subscribed to what this file publishes: the receiver's endpoint is the only one that gets events.
      const created = await json(['endpoints', 'create', '--url', 'https://hooks.example.com/b', '--events', 'shipment.created, shipment.completed']);
      assert.match(created.secret, /^whsec_/);
      assert.deepEqual([...created.event_types].sort(), ['shipment.completed', 'shipment.created']);
      assert.equal(created.state, 'enabled');
      assert.equal((await h.api('GET', `/v1/endpoints/${created.id}`)).status, 200);
    });

    test('list shows every endpoint; get shows one', async () => {
      const listed = ok(await cli(['endpoints', 'list']));
      assert.match(listed.stdout, /^ID +STATE +FAILURES +URL +EVENT TYPES$/m);
      assert.match(listed.stdout, new RegExp(`^${endpointId} +enabled +0/20 +${receiver.url} +alarm\\.created$`, 'm'));
      assert.doesNotMatch(listed.stdout, SECRET);
      const page = await json(['endpoints', 'list']);
      assert.equal(page.data.length, 2);
      assert.equal(page.next_cursor, null);

      const got = ok(await cli(['endpoints', 'get', endpointId]));
      assert.match(got.stdout, new RegExp(`^url +${receiver.url}$`, 'm'));
      assert.match(got.stdout, /^state +enabled$/m);
      assert.match(got.stdout, /^failures +0 of 20/m);
      assert.doesNotMatch(got.stdout, SECRET);
    });

    test('update changes only the fields given; with none it is a usage error', async () => {
      const res = ok(await cli(['endpoints', 'update', endpointId, '--events', 'alarm.created,alarm.resolved', '--description', 'Night shift']));
      assert.match(res.stdout, /^event types +alarm\.created, alarm\.resolved$/m);
      const got = await h.api('GET', `/v1/endpoints/${endpointId}`);
      assert.deepEqual(got.json.event_types, ['alarm.created', 'alarm.resolved']);
      assert.equal(got.json.description, 'Night shift');
      assert.equal(got.json.url, receiver.url);

      const none = await cli(['endpoints', 'update', endpointId]);
      assert.equal(none.code, 2, 'a usage error');
      assert.match(none.stderr, /^herald: nothing to update; give --url, --events, --description, --rate-limit, --scheme, --header, --secret-header, --metadata, --clear-headers or --clear-metadata$/m);
    });

    test('custom headers and metadata on create and update; list --search and --metadata filter; a secret value is never printed', async () => {
      const token = 'tok_cli_secret_value_9f8e7d';
      const created = ok(
        await cli([
          'endpoints',
          'create',
          '--url',
          'https://cli-meta.example.com/hook',
          '--events',
          'alarm.created',
          '--description',
          'CLI metadata check',
          '--header',
          'X-Tenant: acme',
          '--secret-header',
          `X-Api-Key: ${token}`,
          '--metadata',
          'team=billing',
          '--metadata',
          'tier=gold',
        ]),
      );
      assert.match(created.stdout, /^headers +X-Tenant: acme; X-Api-Key: tok_… \(secret\)$/m);
      assert.match(created.stdout, /^metadata +team=billing; tier=gold$/m);
      assert.ok(!created.stdout.includes(token));
      const id = /^id +(\S+)$/m.exec(created.stdout)![1]!;

      const updated = ok(await cli(['endpoints', 'update', id, '--secret-header', 'X-Api-Key', '--metadata', 'team=ops']));
      assert.match(updated.stdout, /^headers +X-Api-Key: tok_… \(secret\)$/m, 'the secret kept, X-Tenant gone');
      assert.match(updated.stdout, /^metadata +team=ops$/m);
      const cleared = ok(await cli(['endpoints', 'update', id, '--clear-headers', '--clear-metadata']));
      assert.match(cleared.stdout, /^headers +\(none\)$/m);
      assert.match(cleared.stdout, /^metadata +\(none\)$/m);
      ok(await cli(['endpoints', 'update', id, '--metadata', 'team=ops']));

      const searched = await json(['endpoints', 'list', '--search', 'CLI METADATA']);
      assert.deepEqual(searched.data.map((e: { id: string }) => e.id), [id]);
      const filtered = await json(['endpoints', 'list', '--metadata', 'team=ops']);
      assert.deepEqual(filtered.data.map((e: { id: string }) => e.id), [id]);
      assert.deepEqual((await json(['endpoints', 'list', '--metadata', 'team=billing'])).data, []);

      const bad = await cli(['endpoints', 'update', id, '--header', 'no colon']);
      assert.equal(bad.code, 2);
      assert.match(bad.stderr, /must be "Name: value"/);
      const refused = await cli(['endpoints', 'update', id, '--header', 'X-Service-Signature: v1=forged']);
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /X-Service-Signature is set by Herald or by HTTP itself/);
      ok(await cli(['endpoints', 'delete', id]));
    });

    test('--rate-limit sets the limit on create and update and none removes it; get shows it, the slow-down and the retention', async () => {
      const created = ok(await cli(['endpoints', 'create', '--url', 'https://hooks.example.com/limited', '--events', 'shipment.created', '--rate-limit', '25']));
      assert.match(created.stdout, /^rate limit +25 requests per second at most$/m);
      const id = /^id\s+(\S+)$/m.exec(created.stdout)![1]!;
      assert.equal((await h.api('GET', `/v1/endpoints/${id}`)).json.rate_limit, 25);

      const updated = ok(await cli(['endpoints', 'update', id, '--rate-limit', '1']));
      assert.match(updated.stdout, /^rate limit +1 request per second at most$/m);
      assert.equal((await json(['endpoints', 'update', id, '--rate-limit', 'none'])).rate_limit, null);
      assert.equal((await h.api('GET', `/v1/endpoints/${id}`)).json.rate_limit, null);

      const got = ok(await cli(['endpoints', 'get', id]));
      assert.match(got.stdout, /^rate limit +none$/m);
      assert.match(got.stdout, /^slowed down +no$/m);
      assert.match(got.stdout, /^history +succeeded deliveries kept 30 days; failed and skipped 90 days \(recover reaches that far back\)$/m);

      // What the scheduler writes after a 429 or 503.
      const until = new Date(h.clock.now().getTime() + 60_000);
      await h.db.query('UPDATE endpoints SET throttled_until = $2, throttle_limit = 2 WHERE id = $1', [id, until]);
      const slowed = ok(await cli(['endpoints', 'get', id]));
      assert.match(
        slowed.stdout,
        new RegExp(`^slowed down +yes, the receiver answered 429 or 503: no new request before ${until.toISOString()}; at most 2 at a time until it answers 2xx again$`, 'm'),
      );

      // Not a number: refused before any request. Out of range: the server says what it accepts.
      const word = await cli(['endpoints', 'update', id, '--rate-limit', 'fast']);
      assert.equal(word.code, 2, 'a usage error');
      assert.match(word.stderr, /^herald: .*--rate-limit <n\|none>.*must be a whole number of requests per second, or none/);
      const big = await cli(['endpoints', 'update', id, '--rate-limit', '20000']);
      assert.equal(big.code, 1);
      assert.match(big.stderr, /^herald: rate_limit: must be a whole number of requests per second from 1 to 10,000, or null for no limit \(400 validation_failed\)$/m);
      await h.api('DELETE', `/v1/endpoints/${id}`);
    });

    test('rotate prints the new secret once; it signs the next request', async () => {
      const res = ok(await cli(['endpoints', 'rotate', endpointId]));
      assert.match(res.stdout, /shown once/);
      const secrets = res.stdout.match(SECRET) ?? [];
      assert.equal(secrets.length, 1);
      assert.notEqual(secrets[0], secret);
      secret = secrets[0]!;
    });

    test('rotate --overlap keeps the old secret valid and says until when; end-overlap ends it; update --scheme prints the new secret once', async () => {
      const rotated = ok(await cli(['endpoints', 'rotate', endpointId, '--overlap', '24h']));
      const secrets = rotated.stdout.match(SECRET) ?? [];
      assert.equal(secrets.length, 1);
      const until = new Date(h.clock.now().getTime() + 86_400_000).toISOString();
      assert.match(rotated.stdout, new RegExp(`Until ${until.replace(/\./g, '\\.')}, every request carries two signatures`));
      assert.match(ok(await cli(['endpoints', 'get', endpointId])).stdout, /old secret +still signs next to the new one until/);
      const bad = await cli(['endpoints', 'rotate', endpointId, '--overlap', '8d']);
      assert.equal(bad.code, 1);
      assert.match(bad.stderr, /overlap_seconds: must be a whole number of seconds from 0/);
      assert.equal((await cli(['endpoints', 'rotate', endpointId, '--overlap', 'soon'])).code, 2);

      const ended = ok(await cli(['endpoints', 'end-overlap', endpointId]));
      assert.match(ended.stdout, /the old one is erased/);
      assert.equal((await json(['endpoints', 'get', endpointId])).previous_secret_expires_at, null);

      const changed = ok(await cli(['endpoints', 'update', endpointId, '--scheme', 'standard-webhooks']));
      assert.match(changed.stdout, /signature scheme +standard-webhooks/);
      assert.equal((changed.stdout.match(/whsec_[A-Za-z0-9+/]{43}=/g) ?? []).length, 1, 'the new secret, once');
      const back = ok(await cli(['endpoints', 'update', endpointId, '--scheme', 'herald']));
      secret = (back.stdout.match(SECRET) ?? [])[0]!;
      assert.ok(secret);
      const unchanged = ok(await cli(['endpoints', 'update', endpointId, '--scheme', 'herald']));
      assert.equal((unchanged.stdout.match(SECRET) ?? []).length, 0, 'no new secret when the scheme stays');
    });

    test('test against a receiver that answers 200: status, duration, exit 0, signed with the new secret', async () => {
      const before = receiver.requests.length;
      const res = ok(await cli(['endpoints', 'test', endpointId]));
      assert.match(res.stdout, /succeeded/);
      assert.match(res.stdout, /^ +status +200$/m);
      assert.match(res.stdout, /^ +duration +\d+ ms$/m);
      const req = receiver.requests[before]!;
      assert.equal(req.headers['x-service-event'], 'webhook.test');
      assert.equal(req.headers['x-service-signature'], opensslSignature(secret, String(req.headers['x-service-timestamp']), req.body));

      const typed = await json(['endpoints', 'test', endpointId, '--event-type', 'alarm.created']);
      assert.equal(typed.outcome, 'succeeded');
      assert.equal(typed.status_code, 200);
      assert.equal(typed.event_type, 'alarm.created');
    });

    test('test against a failing receiver: status and error shown, exit 1 (also with --json)', async () => {
      receiver.respond({ status: 503 });
      try {
        const res = await cli(['endpoints', 'test', endpointId]);
        assert.equal(res.code, 1, res.stderr);
        assert.match(res.stdout, /FAILED/);
        assert.match(res.stdout, /^ +status +503$/m);
        assert.match(res.stdout, /^ +error +HTTP 503/m);
        const asJson = await cli(['--json', 'endpoints', 'test', endpointId]);
        assert.equal(asJson.code, 1);
        assert.equal(JSON.parse(asJson.stdout).outcome, 'failed');
      } finally {
        receiver.respond({ status: 200 });
      }
    });

    let skippedEventId: string;
    test('disable, then recover --dry-run counts the skipped delivery; recover needs the endpoint enabled', async () => {
      const disabled = ok(await cli(['endpoints', 'disable', endpointId, '--reason', 'receiver maintenance']));
      assert.match(disabled.stdout, /is disabled by API key .* since .*: receiver maintenance/);
      assert.equal((await h.api('GET', `/v1/endpoints/${endpointId}`)).json.state, 'disabled');

      const published = await h.api('POST', '/v1/events', { type: 'alarm.created', data: alarmData() });
      skippedEventId = published.json.id;
      const dry = ok(await cli(['endpoints', 'recover', endpointId, '--since', SINCE, '--dry-run']));
      assert.match(dry.stdout, /would send again 1 failed or skipped delivery .*dry run: nothing was sent/);
      assert.deepEqual(await json(['endpoints', 'recover', endpointId, '--since', SINCE, '--dry-run']), {
        since: new Date(SINCE).toISOString(),
        dry_run: true,
        count: 1,
      });

      const refused = await cli(['endpoints', 'recover', endpointId, '--since', SINCE]);
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /^herald: the endpoint is disabled.*\(409 endpoint_disabled\)$/m);
    });

    test('enable, then recover sends the skipped delivery again', async () => {
      const enabled = ok(await cli(['endpoints', 'enable', endpointId]));
      assert.match(enabled.stdout, /is enabled; failure streak 0 of 20/);
      assert.match(enabled.stdout, /herald endpoints recover/);

      const recovered = ok(await cli(['endpoints', 'recover', endpointId, '--since', SINCE]));
      assert.match(recovered.stdout, /^sending again 1 failed or skipped delivery/);
      const before = receiver.requests.length;
      await h.drain();
      assert.equal(receiver.requests.length, before + 1);
      assert.equal(receiver.requests[before]!.headers['x-service-event-id'], skippedEventId);
    });

    let retriedEventId: string;
    test('attempts: newest first; --failures keeps retrying and failed; --limit', async () => {
      receiver.respond({ status: 503 });
      retriedEventId = (await h.api('POST', '/v1/events', { type: 'alarm.created', data: alarmData() })).json.id;
      assert.equal((await h.dispatcher.tick()).retrying, 1);
      receiver.respond({ status: 200 });
      assert.equal((await h.drain()).succeeded, 1);

      const all = await json(['attempts', endpointId]);
      const started = all.data.map((a: { started_at: string }) => a.started_at);
      assert.deepEqual(started, [...started].sort().reverse(), 'newest first');
      assert.equal(all.data[0].event_id, retriedEventId);
      assert.equal(all.data[0].outcome, 'succeeded');
      assert.deepEqual(new Set(all.data.map((a: { outcome: string }) => a.outcome)), new Set(['succeeded', 'retrying', 'failed']));

      const failures = await json(['attempts', endpointId, '--failures']);
      assert.ok(failures.data.length >= 2);
      for (const a of failures.data) assert.ok(['retrying', 'failed'].includes(a.outcome), a.outcome);
      assert.ok(failures.data.some((a: { event_id: string; status_code: number }) => a.event_id === retriedEventId && a.status_code === 503));

      const one = await json(['attempts', endpointId, '--limit', '1']);
      assert.equal(one.data.length, 1);
      assert.equal(one.data[0].id, all.data[0].id);
      assert.notEqual(one.next_cursor, null);

      const table = ok(await cli(['attempts', endpointId, '--failures']));
      assert.match(table.stdout, /^STARTED +OUTCOME +STATUS +DURATION +TRY +EVENT TYPE +EVENT +ERROR$/m);
      assert.match(table.stdout, new RegExp(`retrying +503 +\\d+ ms +#1 +alarm\\.created +${retriedEventId} +HTTP 503`));
      assert.doesNotMatch(table.stdout, /succeeded/);

      const bad = await cli(['attempts', endpointId, '--limit', '0']);
      assert.notEqual(bad.code, 0);
      assert.match(bad.stderr, /--limit/);
    });

    test("events get shows each delivery's state and its attempts", async () => {
      const res = ok(await cli(['events', 'get', retriedEventId]));
      assert.match(res.stdout, new RegExp(`^id +${retriedEventId}$`, 'm'));
      assert.match(res.stdout, /^type +alarm\.created$/m);
      assert.match(res.stdout, new RegExp(`^  endpoint ${endpointId} +succeeded +\\(2 attempts, last HTTP 200\\)$`, 'm'));
      assert.match(res.stdout, /^ +#1 +\S+ +retrying, HTTP 503/m);
      assert.match(res.stdout, /^ +#2 +\S+ +succeeded, HTTP 200/m);

      const detail = await json(['events', 'get', retriedEventId]);
      const delivery = detail.deliveries.find((d: { endpoint_id: string }) => d.endpoint_id === endpointId);
      assert.equal(delivery.state, 'succeeded');
      assert.deepEqual(delivery.attempt_log.map((a: { outcome: string }) => a.outcome), ['retrying', 'succeeded']);

      const missing = await cli(['events', 'get', '00000000-0000-4000-8000-000000000000']);
      assert.equal(missing.code, 1);
      assert.match(missing.stderr, /^herald: no event with id .*\(404 not_found\)$/m);
    });

    test('events list: newest first, filtered by type and time', async () => {
      const page = await json(['events', 'list']);
      assert.deepEqual(page.data.map((e: { id: string }) => e.id), [retriedEventId, skippedEventId]);
      const res = ok(await cli(['events', 'list', '--type', 'alarm.created', '--since', SINCE]));
      assert.match(res.stdout, /^ID +CREATED +TYPE$/m);
      assert.match(res.stdout, new RegExp(`^${retriedEventId} +\\S+ +alarm\\.created$`, 'm'));
      assert.equal(ok(await cli(['events', 'list', '--type', 'alarm.resolved'])).stdout.trim(), '(none)');
      const bad = await cli(['events', 'list', '--since', 'yesterday']);
      assert.equal(bad.code, 1);
      assert.match(bad.stderr, /query\.since: must be a date-time/);
    });

    test('events redeliver queues the event for the endpoint again', async () => {
      const res = ok(await cli(['events', 'redeliver', retriedEventId, '--endpoint', endpointId]));
      assert.match(res.stdout, new RegExp(`queued again: endpoint ${endpointId} +pending`));
      const before = receiver.requests.length;
      assert.equal((await h.drain()).succeeded, 1);
      assert.equal(receiver.requests.length, before + 1);
      assert.equal(receiver.requests[before]!.headers['x-service-event-id'], retriedEventId);
    });

    test('events count, and replays: a dry run by default, then with --yes the replay and its record', async () => {
      const expected = (await h.api('GET', '/v1/events/count?type=alarm.created')).json.count;
      assert.match(ok(await cli(['events', 'count', '--type', 'alarm.created'])).stdout, new RegExp(`^${expected} events? match$`, 'm'));
      assert.deepEqual(await json(['events', 'list', '--id', retriedEventId]).then((p) => p.data.map((e: { id: string }) => e.id)), [retriedEventId]);

      const dry = ok(await cli(['replays', 'create', '--id', retriedEventId, '--to', endpointId]));
      assert.match(dry.stdout, new RegExp(`^would send 1 event again to endpoint ${endpointId} .*dry run`, 'm'));
      assert.match(dry.stdout, /--yes/);
      assert.equal((await h.api('GET', '/v1/replays')).json.data.length, 0, 'nothing created without --yes');

      const created = await json(['replays', 'create', '--id', retriedEventId, '--to', endpointId, '--yes']);
      assert.equal(created.state, 'running');
      await runReplays(h.deps, { maxBatches: 5 });
      const shown = ok(await cli(['replays', 'get', created.id]));
      assert.match(shown.stdout, /^state +completed$/m);
      assert.match(shown.stdout, /^progress +1 of 1 events$/m);
      const before = receiver.requests.length;
      await h.drain();
      assert.equal(receiver.requests.slice(before).filter((r) => r.headers['x-service-event-id'] === retriedEventId).length, 1, 'the event once more');
      assert.match(ok(await cli(['replays', 'list'])).stdout, new RegExp(`^${created.id} +\\S+ +completed +1/1 +API key`, 'm'));

      const bad = await cli(['replays', 'create', '--state', 'lost']);
      assert.equal(bad.code, 1);
      assert.match(bad.stderr, /filter\.states: "lost" is not a delivery state/);
      const both = await cli(['replays', 'create', '--id', retriedEventId, '--type', 'alarm.created']);
      assert.equal(both.code, 2, 'a usage error');
      assert.match(both.stderr, /^herald: give --id, or search options \(--type, --since, …\), not both$/m);
    });

    test('--idempotency-key: the same command twice acts once', async () => {
      const args = ['endpoints', 'create', '--url', 'https://hooks.example.com/once', '--events', 'alarm.resolved', '--idempotency-key', 'cli-test-once'];
      const first = await json(args);
      const again = ok(await cli(args));
      assert.match(again.stderr, /replayed its answer/);
      assert.match(again.stdout, new RegExp(`^id +${first.id}$`, 'm'));
      const urls = (await h.api('GET', '/v1/endpoints?limit=100')).json.data.map((e: { url: string }) => e.url);
      assert.equal(urls.filter((u: string) => u === 'https://hooks.example.com/once').length, 1);
    });

    test('delete removes the endpoint; getting it again is a 404', async () => {
      const created = await json(['endpoints', 'create', '--url', 'https://hooks.example.com/gone', '--events', 'shipment.created']);
      assert.match(ok(await cli(['endpoints', 'delete', created.id])).stdout, /deleted endpoint/);
      const gone = await cli(['endpoints', 'get', created.id]);
      assert.equal(gone.code, 1);
      assert.match(gone.stderr, /^herald: no endpoint with id .*\(404 not_found\)$/m);
    });

    test('a wrong API key: the 401 and which setting to check, without printing the key', async () => {
      const wrong = 'hk_AAAAAAAA_BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB';
      const res = await cli(['endpoints', 'list'], { HERALD_API_KEY: wrong });
      assert.equal(res.code, 1);
      assert.match(res.stderr, /\(401 unauthorized\)/);
      assert.match(res.stderr, /--api-key \/ HERALD_API_KEY was refused/);
      const flag = await cli(['endpoints', 'list', '--api-key', wrong]);
      assert.equal(flag.code, 1);
      assert.match(flag.stderr, /\(401 unauthorized\)/);
    });

    test('no server at the address: names the URL and suggests herald start', async () => {
      const url = `http://127.0.0.1:${await closedPort()}`;
      const res = await cli(['endpoints', 'list'], { HERALD_URL: url });
      assert.equal(res.code, 5, 'the API cannot be reached');
      assert.match(res.stderr, new RegExp(`^herald: cannot reach Herald at ${url.replace(/\./g, '\\.')}: connection refused`));
      assert.match(res.stderr, /herald start/);
      const flag = await cli(['endpoints', 'list', '--herald-url', url]);
      assert.match(flag.stderr, /cannot reach Herald at/);
    });

    test('list follows next_cursor past the largest page', async () => {
      for (let i = 0; i < 100; i++) {
        const res = await h.api('POST', '/v1/endpoints', { url: `https://hooks.example.com/many/${i}`, event_types: ['shipment.completed'] });
        assert.equal(res.status, 201);
      }
      const { rows } = await h.db.query<{ n: number }>('SELECT count(*)::int AS n FROM endpoints WHERE account_id = $1', [h.accountId]);
      const total = rows[0]!.n;
      const page = await json(['endpoints', 'list']);
      assert.ok(total > 100);
      assert.equal(page.data.length, total);
      assert.equal(new Set(page.data.map((e: { id: string }) => e.id)).size, total);
      assert.equal(page.next_cursor, null);
    });
  });
}
