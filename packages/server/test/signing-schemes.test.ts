import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Webhook } from 'standardwebhooks';
import { verifyStandardSync, verifySync } from '@herald/verify/node';
import { DEFAULT_PANEL_AUTH } from '../src/config.ts';
import { decryptSecret } from '../src/core/secrets.ts';
import { createMaintainer } from '../src/maintenance/maintainer.ts';
import { claimDeliveries } from '../src/storage/queries/claim-deliveries.ts';
import { ENGINES } from './helpers/engines.ts';
import { alarmData, createTestHerald, TEST_KEY, type TestHerald } from './helpers/herald.ts';
import { assertProblem } from './helpers/problem.ts';
import { startReceiver, type ReceivedRequest, type Receiver } from './helpers/receiver.ts';

const quiet = { info() {}, warn() {}, error() {} };

for (const engine of ENGINES) {
  describe(`signature schemes and rotation overlaps [${engine}]`, () => {
    let h: TestHerald;
    let receiver: Receiver;

    before(async () => {
      h = await createTestHerald(engine);
      receiver = await startReceiver();
    });
    after(async () => {
      await receiver.close();
      await h.close();
    });
    beforeEach(async () => {
      for (const e of (await h.api('GET', '/v1/endpoints?limit=100')).json.data) await h.api('DELETE', `/v1/endpoints/${e.id}`);
      receiver.respond({ status: 204 });
      // The standardwebhooks library checks timestamps against the system clock.
      h.clock.set(new Date());
    });

    const create = async (body: Record<string, unknown> = {}) => {
      const res = await h.api('POST', '/v1/endpoints', { url: receiver.url, event_types: ['alarm.created'], ...body });
      assert.equal(res.status, 201, JSON.stringify(res.json));
      return res.json as { id: string; secret: string; signature_scheme: string; previous_secret_expires_at: string | null };
    };
    /** Publishes one event and runs the dispatcher once; the request the receiver got. */
    const deliverOne = async (): Promise<ReceivedRequest> => {
      const before = receiver.requests.length;
      assert.equal((await h.api('POST', '/v1/events', { type: 'alarm.created', data: alarmData() })).status, 202);
      await h.dispatcher.tick();
      assert.equal(receiver.requests.length, before + 1);
      return receiver.requests[before]!;
    };
    const headersOf = (req: ReceivedRequest) => req.headers as Record<string, string>;
    const sentAt = (req: ReceivedRequest) => Number(req.headers['x-service-timestamp'] ?? req.headers['webhook-timestamp']);
    const previousColumns = async (id: string) =>
      (await h.db.query<{ previous_secret_encrypted: Buffer | null; previous_secret_until: Date | null }>('SELECT previous_secret_encrypted, previous_secret_until FROM endpoints WHERE id = $1', [id])).rows[0]!;

    test('a Standard Webhooks endpoint gets a whsec_<base64> secret and requests the standardwebhooks library verifies', async () => {
      const ep = await create({ signature_scheme: 'standard-webhooks' });
      assert.equal(ep.signature_scheme, 'standard-webhooks');
      assert.match(ep.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
      assert.equal(Buffer.from(ep.secret.slice(6), 'base64').length, 32);

      const req = await deliverOne();
      const headers = headersOf(req);
      assert.equal(headers['x-service-signature'], undefined, 'no Herald-scheme headers');
      assert.equal(headers['x-service-timestamp'], undefined);
      assert.match(headers['webhook-signature']!, /^v1,[A-Za-z0-9+/]{43}=$/);
      const event = JSON.parse(req.body.toString('utf8'));
      assert.equal(headers['webhook-id'], event.id, 'webhook-id is the event id');
      assert.deepEqual(new Webhook(ep.secret).verify(req.body, headers), event);
      assert.equal(verifyStandardSync({ body: req.body, headers: req.headers, secret: ep.secret, now: sentAt(req) }).id, event.id);

      // The attempt log shows the headers as they were sent.
      const attempts = (await h.api('GET', `/v1/endpoints/${ep.id}/attempts`)).json.data;
      const detail = (await h.api('GET', `/v1/endpoints/${ep.id}/attempts/${attempts[0].id}`)).json;
      for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) assert.equal(detail.request.headers[name], headers[name], name);
    });

    test('webhook-id stays the same across retries of a message, while each attempt is signed afresh', async () => {
      const ep = await create({ signature_scheme: 'standard-webhooks' });
      let calls = 0;
      receiver.respond(() => ({ status: calls++ === 0 ? 500 : 204 }));
      const first = await deliverOne();
      h.clock.advance(120_000);
      await h.dispatcher.tick();
      const second = receiver.requests.at(-1)!;
      assert.notEqual(second, first);
      assert.equal(second.headers['webhook-id'], first.headers['webhook-id']);
      assert.notEqual(second.headers['webhook-timestamp'], first.headers['webhook-timestamp']);
      assert.ok(new Webhook(ep.secret).verify(second.body, headersOf(second)));
    });

    test('a rotation with an overlap signs with both secrets, new first, until it is ended by hand; then the old one is erased', async () => {
      const ep = await create({ signature_scheme: 'standard-webhooks' });
      const rotated = await h.api('POST', `/v1/endpoints/${ep.id}/rotate-secret`, { overlap_seconds: 3600 });
      assert.equal(rotated.status, 200);
      assert.match(rotated.json.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
      const until = new Date(h.clock.now().getTime() + 3600_000).toISOString();
      assert.equal(rotated.json.previous_secret_expires_at, until);
      const shown = await h.api('GET', `/v1/endpoints/${ep.id}`);
      assert.equal(shown.json.previous_secret_expires_at, until);
      assert.ok(!JSON.stringify(shown.json).includes(ep.secret.slice(6)) && !JSON.stringify(shown.json).includes(rotated.json.secret.slice(6)));

      // At rest, the old secret is encrypted like the current one.
      const stored = await previousColumns(ep.id);
      assert.ok(!stored.previous_secret_encrypted!.toString('latin1').includes(ep.secret.slice(6)));
      assert.equal(decryptSecret(TEST_KEY, stored.previous_secret_encrypted!, ep.id), ep.secret);

      const during = await deliverOne();
      const signatures = headersOf(during)['webhook-signature']!.split(' ');
      assert.equal(signatures.length, 2);
      for (const secret of [rotated.json.secret, ep.secret]) assert.ok(new Webhook(secret).verify(during.body, headersOf(during)), 'either secret verifies');
      assert.ok(new Webhook(rotated.json.secret).verify(during.body, { ...headersOf(during), 'webhook-signature': signatures[0]! }), 'the new one first');

      const ended = await h.api('DELETE', `/v1/endpoints/${ep.id}/previous-secret`);
      assert.equal(ended.status, 200);
      assert.equal(ended.json.previous_secret_expires_at, null);
      assert.deepEqual(await previousColumns(ep.id), { previous_secret_encrypted: null, previous_secret_until: null });
      const afterwards = await deliverOne();
      assert.equal(headersOf(afterwards)['webhook-signature']!.split(' ').length, 1);
      assert.ok(new Webhook(rotated.json.secret).verify(afterwards.body, headersOf(afterwards)));
      assert.throws(() => new Webhook(ep.secret).verify(afterwards.body, headersOf(afterwards)));
      // Ending it again is no error.
      assert.equal((await h.api('DELETE', `/v1/endpoints/${ep.id}/previous-secret`)).status, 200);
    });

    test('Herald scheme: during an overlap X-Service-Signature is "v1=<new> v1=<old>"; the first attempt after it erases the old secret', async () => {
      const ep = await create();
      const rotated = (await h.api('POST', `/v1/endpoints/${ep.id}/rotate-secret`, { overlap_seconds: 60 })).json;
      assert.match(rotated.secret, /^whsec_[A-Za-z0-9_-]{43}$/, 'the Herald scheme keeps its secret form');

      const during = await deliverOne();
      const [newer, older, ...rest] = String(during.headers['x-service-signature']).split(' ');
      assert.deepEqual(rest, []);
      const one = (signature: string) => ({ ...during.headers, 'x-service-signature': signature });
      verifySync({ body: during.body, headers: one(newer!), secret: rotated.secret, now: sentAt(during) });
      verifySync({ body: during.body, headers: one(older!), secret: ep.secret, now: sentAt(during) });
      for (const secret of [rotated.secret, ep.secret]) verifySync({ body: during.body, headers: during.headers, secret, now: sentAt(during) });

      h.clock.advance(61_000);
      assert.equal((await h.api('GET', `/v1/endpoints/${ep.id}`)).json.previous_secret_expires_at, null, 'shown as over once it has passed');
      const later = await deliverOne();
      assert.equal(String(later.headers['x-service-signature']).split(' ').length, 1);
      assert.throws(() => verifySync({ body: later.body, headers: later.headers, secret: ep.secret, now: sentAt(later) }), /signature/i);
      // Erased, not just ignored (the erasure is not awaited by the attempt).
      for (let i = 0; i < 50 && (await previousColumns(ep.id)).previous_secret_encrypted !== null; i++) await new Promise((r) => setImmediate(r));
      assert.deepEqual(await previousColumns(ep.id), { previous_secret_encrypted: null, previous_secret_until: null });
    });

    test('a claim that waited for its turn while an endpoint was created still signs that endpoint\'s deliveries its way', { skip: engine === 'pglite' && 'needs a second connection' }, async () => {
      let release!: () => void;
      let locked!: () => void;
      const isLocked = new Promise<void>((resolve) => (locked = resolve));
      // Another claim's turn: the claim below takes its snapshot, then waits for the lock.
      const holder = h.db.transaction(async (tx) => {
        await tx.query('SELECT pg_advisory_xact_lock(104101114097108100)');
        locked();
        await new Promise<void>((resolve) => (release = resolve));
      });
      await isLocked;
      const claim = claimDeliveries(h.db, { limit: 10, leaseMs: 60_000, endpointCap: 8, originCap: 8, now: new Date(h.clock.now().getTime() + 60_000) });
      for (let i = 0; i < 500; i++) {
        const { rows } = await h.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`);
        if (rows[0]!.n > 0) break;
        await new Promise((r) => setImmediate(r));
      }
      // Created after the claim's snapshot, and published to before its turn comes.
      const ep = await create({ signature_scheme: 'standard-webhooks' });
      assert.equal((await h.api('POST', '/v1/events', { type: 'alarm.created', data: alarmData() })).status, 202);
      release();
      await holder;
      const claimed = (await claim).filter((d) => d.endpoint_id === ep.id);
      assert.equal(claimed.length, 1, 'the new endpoint\'s delivery was claimed, not dropped');
      assert.equal(claimed[0]!.signature_scheme, 'standard-webhooks');
      assert.equal(decryptSecret(TEST_KEY, claimed[0]!.secret_encrypted, ep.id), ep.secret);
      await h.db.query('DELETE FROM in_flight');
    });

    test('the maintainer erases previous secrets whose overlap ended, and only those', async () => {
      const expiring = await create();
      const running = await create();
      await h.api('POST', `/v1/endpoints/${expiring.id}/rotate-secret`, { overlap_seconds: 10 });
      await h.api('POST', `/v1/endpoints/${running.id}/rotate-secret`, { overlap_seconds: 3600 });
      h.clock.advance(11_000);
      const maintainer = createMaintainer({
        db: h.db,
        clock: h.clock.now,
        config: { retention: { succeededDays: 30, undeliveredDays: 90 }, sessionIdleMs: DEFAULT_PANEL_AUTH.sessionIdleMs },
        log: quiet,
        onSchemaTooNew: () => {},
        tuning: { batchPauseMs: 0 },
      });
      try {
        assert.equal((await maintainer.runOnce()).sweptPreviousSecrets, 1);
      } finally {
        await maintainer.stop();
      }
      assert.deepEqual(await previousColumns(expiring.id), { previous_secret_encrypted: null, previous_secret_until: null });
      assert.notEqual((await previousColumns(running.id)).previous_secret_encrypted, null);
    });

    test('a rotation without overlap, or overlap_seconds 0, discards the old secret at once', async () => {
      const ep = await create({ signature_scheme: 'standard-webhooks' });
      await h.api('POST', `/v1/endpoints/${ep.id}/rotate-secret`, { overlap_seconds: 3600 });
      const immediate = await h.api('POST', `/v1/endpoints/${ep.id}/rotate-secret`, { overlap_seconds: 0 });
      assert.equal(immediate.json.previous_secret_expires_at, null);
      assert.deepEqual(await previousColumns(ep.id), { previous_secret_encrypted: null, previous_secret_until: null });
      const bare = await h.api('POST', `/v1/endpoints/${ep.id}/rotate-secret`);
      assert.equal(bare.status, 200);
      assert.equal(bare.json.previous_secret_expires_at, null);
      const req = await deliverOne();
      assert.equal(headersOf(req)['webhook-signature']!.split(' ').length, 1);
      assert.ok(new Webhook(bare.json.secret).verify(req.body, headersOf(req)));
    });

    test('overlap_seconds out of range or not a whole number is refused, naming the field', async () => {
      const ep = await create();
      for (const overlap of [-1, 604_801, 1.5, '3600', true]) {
        const res = await h.api('POST', `/v1/endpoints/${ep.id}/rotate-secret`, { overlap_seconds: overlap });
        assertProblem(res, 'validation_failed', 'overlap_seconds');
        assert.match(res.json.detail, /604800/);
      }
      assert.equal((await h.api('POST', `/v1/endpoints/${ep.id}/rotate-secret`, { overlap_seconds: 604_800 })).status, 200);
      assertProblem(await h.api('POST', `/v1/endpoints/${ep.id}/rotate-secret`, { overlap: 5 }), 'validation_failed');
      assertProblem(await h.api('POST', '/v1/endpoints', { url: receiver.url, event_types: ['alarm.created'], signature_scheme: 'svix' }), 'validation_failed', 'signature_scheme');
      assertProblem(await h.api('PATCH', `/v1/endpoints/${ep.id}`, { signature_scheme: 42 }), 'validation_failed', 'signature_scheme');
      assertProblem(await h.api('DELETE', '/v1/endpoints/00000000-0000-4000-8000-000000000000/previous-secret'), 'not_found');
    });

    test('changing the scheme reveals a new secret of its form once and ends an overlap; naming the same scheme changes nothing', async () => {
      const ep = await create();
      await h.api('POST', `/v1/endpoints/${ep.id}/rotate-secret`, { overlap_seconds: 3600 });
      const same = await h.api('PATCH', `/v1/endpoints/${ep.id}`, { signature_scheme: 'herald', description: 'same scheme' });
      assert.equal(same.status, 200);
      assert.equal(same.json.secret, undefined);
      assert.notEqual(same.json.previous_secret_expires_at, null, 'the overlap runs on');

      const changed = await h.api('PATCH', `/v1/endpoints/${ep.id}`, { signature_scheme: 'standard-webhooks' });
      assert.equal(changed.status, 200);
      assert.equal(changed.headers['cache-control'], 'no-store');
      assert.equal(changed.json.signature_scheme, 'standard-webhooks');
      assert.match(changed.json.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
      assert.equal(changed.json.previous_secret_expires_at, null);
      assert.deepEqual(await previousColumns(ep.id), { previous_secret_encrypted: null, previous_secret_until: null });
      assert.equal((await h.api('GET', `/v1/endpoints/${ep.id}`)).json.secret, undefined);

      const req = await deliverOne();
      assert.ok(new Webhook(changed.json.secret).verify(req.body, headersOf(req)));

      const back = await h.api('PATCH', `/v1/endpoints/${ep.id}`, { signature_scheme: 'herald' });
      assert.match(back.json.secret, /^whsec_[A-Za-z0-9_-]{43}$/);
      const again = await deliverOne();
      verifySync({ body: again.body, headers: again.headers, secret: back.json.secret, now: sentAt(again) });
    });

    test('a test event is signed in the endpoint\'s scheme, with both secrets during an overlap', async () => {
      const ep = await create({ signature_scheme: 'standard-webhooks' });
      const rotated = (await h.api('POST', `/v1/endpoints/${ep.id}/rotate-secret`, { overlap_seconds: 600 })).json;
      const before = receiver.requests.length;
      const res = await h.api('POST', `/v1/endpoints/${ep.id}/test`, {});
      assert.equal(res.json.outcome, 'succeeded');
      const req = receiver.requests[before]!;
      for (const secret of [ep.secret, rotated.secret]) assert.ok(new Webhook(secret).verify(req.body, headersOf(req)));
      assert.equal(res.json.request.headers['webhook-signature'], headersOf(req)['webhook-signature']);

      // Once the overlap is over, a test signs with the new secret alone, and erases the old one.
      h.clock.advance(601_000);
      const later = await h.api('POST', `/v1/endpoints/${ep.id}/test`, {});
      assert.equal(later.json.request.headers['webhook-signature'].split(' ').length, 1);
      assert.deepEqual(await previousColumns(ep.id), { previous_secret_encrypted: null, previous_secret_until: null });
    });
  });
}
