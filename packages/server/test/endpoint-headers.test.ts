import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ENGINES } from './helpers/engines.ts';
import { randomUUID } from 'node:crypto';
import { alarmData, createTestHerald, type TestHerald } from './helpers/herald.ts';
import { opensslSignature } from './helpers/independent-hmac.ts';
import { startReceiver, type Receiver } from './helpers/receiver.ts';
import { claimDeliveries, giveBackClaim } from '../src/storage/queries/claim-deliveries.ts';
import { openPostgres } from '../src/storage/postgres.ts';

const SECRET_VALUE = 'Bearer s3cr3t-gateway-token-0c1d2e';

for (const engine of ENGINES) {
  describe(`endpoint custom headers [${engine}]`, () => {
    let h: TestHerald;
    let receiver: Receiver;

    before(async () => {
      h = await createTestHerald(engine);
      receiver = await startReceiver();
    });
    after(async () => {
      await h.close();
      await receiver.close();
    });

    async function create(headers: unknown, url = receiver.url) {
      return h.api('POST', '/v1/endpoints', { url, event_types: ['alarm.created'], headers });
    }

    test('receivers get them on every delivery; Herald\u2019s own headers and signature are unchanged', async () => {
      const created = await create([
        { name: 'X-Tenant', value: 'acme' },
        { name: 'Authorization', value: SECRET_VALUE, secret: true },
      ]);
      assert.equal(created.status, 201);
      assert.deepEqual(created.json.headers, [
        { name: 'X-Tenant', secret: false, value: 'acme', value_hint: null },
        { name: 'Authorization', secret: true, value: null, value_hint: 'Bear…' },
      ]);
      receiver.requests.length = 0;
      await h.api('POST', '/v1/events', { type: 'alarm.created', data: alarmData() });
      await h.api('POST', '/v1/events', { type: 'alarm.created', data: alarmData({ message: 'second' }) });
      const report = await h.dispatcher.tick();
      assert.equal(report.succeeded, 2);
      assert.equal(receiver.requests.length, 2);
      for (const req of receiver.requests) {
        assert.equal(req.headers['x-tenant'], 'acme');
        assert.equal(req.headers['authorization'], SECRET_VALUE);
        assert.equal(req.headers['content-type'], 'application/json; charset=utf-8');
        assert.equal(req.headers['user-agent'], 'Service-Webhooks/1.0');
        assert.equal(req.headers['x-service-event'], 'alarm.created');
        const ts = String(req.headers['x-service-timestamp']);
        assert.equal(req.headers['x-service-signature'], opensslSignature(created.json.secret, ts, req.body), 'signed as always: headers are not signed');
      }
      await h.api('DELETE', `/v1/endpoints/${created.json.id}`);
    });

    test('a secret value is encrypted at rest, never returned nor logged', async () => {
      const created = await create([{ name: 'X-Api-Key', value: SECRET_VALUE, secret: true }]);
      const { rows } = await h.db.query<{ headers: string }>('SELECT headers::text AS headers FROM endpoints WHERE id = $1', [created.json.id]);
      assert.ok(!rows[0]!.headers.includes(SECRET_VALUE), 'stored sealed');
      assert.ok(!rows[0]!.headers.includes(Buffer.from(SECRET_VALUE).toString('base64')));
      const got = await h.api('GET', `/v1/endpoints/${created.json.id}`);
      const list = await h.api('GET', '/v1/endpoints?limit=100');
      for (const body of [created.json, got.json, list.json]) assert.ok(!JSON.stringify(body).includes(SECRET_VALUE));
      assert.ok(!h.logs().includes(SECRET_VALUE));
      await h.api('DELETE', `/v1/endpoints/${created.json.id}`);
    });

    test('an update replaces the list; a secret given without a value keeps it; the next attempt sends the new set', async () => {
      const created = await create([
        { name: 'X-Api-Key', value: SECRET_VALUE, secret: true },
        { name: 'X-Old', value: 'gone soon' },
      ]);
      const id = created.json.id;
      const patched = await h.api('PATCH', `/v1/endpoints/${id}`, { headers: [{ name: 'x-api-key', secret: true }, { name: 'X-New', value: 'v2' }] });
      assert.equal(patched.status, 200);
      assert.deepEqual(patched.json.headers, [
        { name: 'x-api-key', secret: true, value: null, value_hint: 'Bear…' },
        { name: 'X-New', secret: false, value: 'v2', value_hint: null },
      ]);
      const left = await h.api('PATCH', `/v1/endpoints/${id}`, { description: 'headers left out stay' });
      assert.deepEqual(left.json.headers, patched.json.headers);
      receiver.requests.length = 0;
      await h.api('POST', '/v1/events', { type: 'alarm.created', data: alarmData() });
      assert.equal((await h.dispatcher.tick()).succeeded, 1);
      const req = receiver.requests[0]!;
      assert.equal(req.headers['x-api-key'], SECRET_VALUE);
      assert.equal(req.headers['x-new'], 'v2');
      assert.equal(req.headers['x-old'], undefined);

      const noValue = await h.api('PATCH', `/v1/endpoints/${id}`, { headers: [{ name: 'X-Other', secret: true }] });
      assert.equal(noValue.status, 400);
      assert.match(noValue.json.detail, /headers\[0\]\.value: is required: X-Other has no secret value to keep/);

      const cleared = await h.api('PATCH', `/v1/endpoints/${id}`, { headers: [] });
      assert.deepEqual(cleared.json.headers, []);
      receiver.requests.length = 0;
      await h.api('POST', '/v1/events', { type: 'alarm.created', data: alarmData() });
      assert.equal((await h.dispatcher.tick()).succeeded, 1);
      assert.equal(receiver.requests[0]!.headers['x-api-key'], undefined);
      await h.api('DELETE', `/v1/endpoints/${id}`);
    });

    test('a test event carries them too', async () => {
      const created = await create([{ name: 'X-Api-Key', value: SECRET_VALUE, secret: true }]);
      receiver.requests.length = 0;
      const sent = await h.api('POST', `/v1/endpoints/${created.json.id}/test`, {});
      assert.equal(sent.status, 200);
      assert.equal(receiver.requests[0]!.headers['x-api-key'], SECRET_VALUE);
      assert.ok(!JSON.stringify(sent.json).includes(SECRET_VALUE), 'the attempt log shows Herald\u2019s headers only');
      await h.api('DELETE', `/v1/endpoints/${created.json.id}`);
    });

    test('an endpoint created while a claim waited for its turn: the claim reads its headers with its delivery', { skip: engine !== 'postgres' && 'needs a second connection' }, async () => {
      const claimId = randomUUID();
      let claiming: Promise<Awaited<ReturnType<typeof claimDeliveries>>> | undefined;
      let id = '';
      // Another claim holds the claims' lock while this one starts and waits; the endpoint is created meanwhile.
      // The holder has a pool of its own: a query of h.db inside h.db's transaction would run in that transaction.
      const other = await openPostgres({ connectionString: h.db.url!, max: 1 });
      try {
        await other.transaction(async (tx) => {
          await tx.query('SELECT pg_advisory_xact_lock(104101114097108100)');
          claiming = claimDeliveries(h.db, { limit: 10, leaseMs: 60_000, endpointCap: 10, originCap: 10, now: h.clock.now(), claimId });
          for (let i = 0; ; i++) {
            const { rows } = await tx.query<{ n: number }>(
              // pg_locks, not pg_stat_activity: a transaction reads pg_stat_activity once and keeps that snapshot.
              `SELECT count(*)::int AS n FROM pg_locks
                WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
            );
            if (rows[0]!.n > 0) break;
            assert.ok(i < 500, 'the claim never waited for the lock');
            await new Promise((r) => setTimeout(r, 10));
          }
          const created = await create([{ name: 'X-Api-Key', value: SECRET_VALUE, secret: true }]);
          id = created.json.id;
          await h.api('POST', '/v1/events', { type: 'alarm.created', data: alarmData() });
        });
      } finally {
        await other.close();
      }
      const claimed = (await claiming!).filter((d) => d.endpoint_id === id);
      assert.equal(claimed.length, 1, 'the function saw the new endpoint and its delivery');
      assert.match(claimed[0]!.headers ?? '', /X-Api-Key/, 'and its headers, in the same view');
      assert.ok(!(claimed[0]!.headers ?? '').includes(SECRET_VALUE), 'the secret value still sealed');
      await giveBackClaim(h.db, claimId);

      receiver.requests.length = 0;
      assert.equal((await h.dispatcher.tick()).succeeded, 1);
      assert.equal(receiver.requests[0]!.headers['x-api-key'], SECRET_VALUE);
      await h.api('DELETE', `/v1/endpoints/${id}`);
    });


    test('names Herald or HTTP sets are refused, naming the header', async () => {
      for (const name of [
        'X-Service-Signature',
        'x-service-timestamp',
        'X-Service-Delivery-ID',
        'X-Service-Event',
        'X-Service-Anything',
        'Content-Type',
        'content-length',
        'Host',
        'User-Agent',
        'Connection',
        'Transfer-Encoding',
        'Keep-Alive',
        'Upgrade',
        'TE',
        'Trailer',
        'Proxy-Authorization',
      ]) {
        const res = await create([{ name, value: 'x' }]);
        assert.equal(res.status, 400, name);
        assert.equal(res.json.code, 'validation_failed');
        assert.equal(res.json.errors[0].field, 'headers[0].name');
        assert.match(res.json.detail, new RegExp(`${name} is set by Herald or by HTTP itself`), name);
      }
    });

    test('names, values, count and size are bounded', async () => {
      const refuse = async (headers: unknown, field: string, pattern: RegExp) => {
        const res = await create(headers);
        assert.equal(res.status, 400, JSON.stringify(headers).slice(0, 80));
        assert.equal(res.json.errors[0].field, field);
        assert.match(res.json.detail, pattern);
      };
      await refuse([{ name: 'X Bad', value: 'x' }], 'headers[0].name', /is not a header name/);
      await refuse([{ name: 'X-Bad:', value: 'x' }], 'headers[0].name', /is not a header name/);
      await refuse([{ name: '', value: 'x' }], 'headers[0].name', /is not a header name/);
      await refuse([{ name: 'X-Long'.padEnd(101, 'x'), value: 'x' }], 'headers[0].name', /is not a header name/);
      await refuse([{ name: 'X-A', value: 'line\r\nX-Injected: 1' }], 'headers[0].value', /no line breaks/);
      await refuse([{ name: 'X-A', value: 'a\nb' }], 'headers[0].value', /no line breaks/);
      await refuse([{ name: 'X-A', value: 'nul\u0000' }], 'headers[0].value', /.+/);
      await refuse([{ name: 'X-A', value: '' }], 'headers[0].value', /1 to 4,096 characters/);
      await refuse([{ name: 'X-A', value: ' padded' }], 'headers[0].value', /printable ASCII/);
      await refuse([{ name: 'X-A', value: 'caf\u00e9' }], 'headers[0].value', /printable ASCII/);
      await refuse([{ name: 'X-A', value: 'x'.repeat(4_097) }], 'headers[0].value', /1 to 4,096/);
      await refuse([{ name: 'X-A', value: 'a' }, { name: 'x-a', value: 'b' }], 'headers[1].name', /given twice/);
      const many = Array.from({ length: 21 }, (_, i) => ({ name: `X-H${i}`, value: 'v' }));
      const tooMany = await create(many);
      assert.equal(tooMany.status, 400);
      const big = Array.from({ length: 3 }, (_, i) => ({ name: `X-H${i}`, value: 'v'.repeat(4_000) }));
      await refuse(big, 'headers', /add up to 12,012 characters; an endpoint's may add up to 8,192/);
      const fits = await create([{ name: 'X-Tab', value: 'a\tb c' }, ...Array.from({ length: 19 }, (_, i) => ({ name: `X-H${i}`, value: 'v' }))]);
      assert.equal(fits.status, 201);
      await h.api('DELETE', `/v1/endpoints/${fits.json.id}`);
    });
  });
}
