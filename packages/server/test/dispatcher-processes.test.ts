import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { systemClock } from '../src/core/clock.ts';
import { createAccount, createApiKey } from '../src/services/accounts.ts';
import { createServiceDeps, type ServiceDeps } from '../src/services/deps.ts';
import { createEndpoint } from '../src/services/endpoints.ts';
import { publishEvents } from '../src/services/events.ts';
import { openPostgres } from '../src/storage/postgres.ts';
import type { Db } from '../src/storage/db.ts';
import { createScratchPostgres, ENGINES } from './helpers/engines.ts';
import { TEST_ADDRESSES, TEST_KEY } from './helpers/herald.ts';
import { startHeraldProcess } from './helpers/process.ts';
import { startReceiver, type ReceivedRequest, type Receiver } from './helpers/receiver.ts';

const distinctEvents = (rs: ReceivedRequest[]) => new Set(rs.map((r) => String(r.headers['x-service-event-id']))).size;
const duplicateAttemptIds = (rs: ReceivedRequest[]) => rs.length - new Set(rs.map((r) => String(r.headers['x-service-delivery-id']))).size;

describe('worker processes on one PostgreSQL', { skip: !ENGINES.includes('postgres') && 'set HERALD_TEST_DATABASE_URL' }, () => {
  let scratch: { url: string; drop(): Promise<void> };
  let db: Db;
  let receiver: Receiver;
  let accountId: string;
  const env = () => ({ DATABASE_URL: scratch.url, HERALD_ENCRYPTION_KEY: TEST_KEY.toString('base64'), HERALD_CONCURRENCY: '16', HERALD_ENDPOINT_CONCURRENCY: '16' });
  let deps: ServiceDeps;

  before(async () => {
    scratch = await createScratchPostgres();
    db = await openPostgres({ connectionString: scratch.url });
    deps = createServiceDeps({ db, encryptionKey: TEST_KEY, clock: systemClock, addresses: TEST_ADDRESSES });
    receiver = await startReceiver();
    // A receiver that takes a moment, so work is in flight when a worker dies.
    receiver.respond({ status: 200, delayMs: 20 });
    accountId = (await createAccount(db, 'Acme')).id;
    await createApiKey(db, accountId);
    await createEndpoint(deps, accountId, { url: receiver.url, event_types: ['shipment.created'] });
  });
  after(async () => {
    await db.close();
    await receiver.close();
    await scratch.drop();
  });

  async function publish(n: number, offset: number) {
    const events = Array.from({ length: n }, (_, i) => ({ type: 'shipment.created', data: { id: offset + i } }));
    for (let i = 0; i < events.length; i += 100) await publishEvents(deps, accountId, events.slice(i, i + 100), { batch: true });
  }

  test('two workers share the queue and never send the same attempt twice', { timeout: 120_000 }, async () => {
    const a = await startHeraldProcess(['--role', 'worker'], env());
    const b = await startHeraldProcess(['--role', 'worker'], env());
    try {
      await publish(400, 0);
      await receiver.until((rs) => distinctEvents(rs) >= 400);
      assert.equal(duplicateAttemptIds(receiver.requests), 0);
      assert.equal(receiver.requests.length, 400, 'each event delivered exactly once when no worker dies');
    } finally {
      a.child.kill('SIGTERM');
      b.child.kill('SIGTERM');
      assert.equal(await a.exited, 0, 'SIGTERM is a clean shutdown');
      assert.equal(await b.exited, 0);
    }
    // A clean shutdown records every result before the process exits.
    const { rows } = await db.query<{ state: string; n: number }>('SELECT state, count(*)::int AS n FROM deliveries GROUP BY state');
    assert.deepEqual(rows, [{ state: 'succeeded', n: 400 }]);
  });

  test('SIGKILL mid-flight: after the lease runs out a new worker delivers everything; duplicates stay within what was in flight', { timeout: 120_000 }, async () => {
    receiver.requests.length = 0;
    const a = await startHeraldProcess(['--role', 'worker'], env());
    await publish(300, 1000);
    await receiver.received(60);
    a.child.kill('SIGKILL');
    assert.equal(await a.exited, 'SIGKILL');
    const killedAt = receiver.requests.length;
    // Time passing, made explicit: the dead worker's leases run out, are
    // reaped, and the back-off after a lost lease passes.
    const expired = await db.query<{ event_id: string }>(
      `WITH lost AS (DELETE FROM in_flight RETURNING delivery_id)
       UPDATE deliveries d SET lost_attempts = d.lost_attempts + 1, next_attempt_at = LEAST(d.next_attempt_at, now())
         FROM lost WHERE d.id = lost.delivery_id AND d.state = 'pending' RETURNING d.event_id`,
    );
    assert.ok(expired.rowCount > 0, 'the worker died with deliveries leased');
    const b = await startHeraldProcess(['--role', 'worker'], env());
    try {
      // Every event arrives, and every delivery the dead worker held is sent again by the new one.
      await receiver.until((rs) => {
        if (distinctEvents(rs) < 300) return false;
        const resent = new Set(rs.slice(killedAt).map((r) => String(r.headers['x-service-event-id'])));
        return expired.rows.every((e) => resent.has(e.event_id));
      });
      const duplicates = receiver.requests.length - 300;
      assert.ok(duplicates <= expired.rowCount, `only deliveries the dead worker held are sent twice: ${duplicates} > ${expired.rowCount}`);
      assert.ok(expired.rowCount <= 16, 'a worker holds at most its concurrency (16) of leases');
      // B records everything before it exits on SIGTERM.
      b.child.kill('SIGTERM');
      assert.equal(await b.exited, 0);
      const { rows } = await db.query<{ state: string; n: number }>(`SELECT state, count(*)::int AS n FROM deliveries GROUP BY state`);
      assert.deepEqual(rows, [{ state: 'succeeded', n: 700 }]);
    } finally {
      b.child.kill('SIGKILL');
    }
  });
});

describe('an embedded Herald killed mid-flight', () => {
  let dataDir: string;
  let receiver: Receiver;
  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'herald-crash-'));
    receiver = await startReceiver();
    receiver.respond({ status: 200, delayMs: 20 });
  });
  after(async () => {
    await receiver.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  test('restarts on the same data directory and delivers every event', { timeout: 120_000 }, async () => {
    const env = { HERALD_DATA_DIR: dataDir, HERALD_PORT: '0', HERALD_CONCURRENCY: '16', HERALD_ENDPOINT_CONCURRENCY: '16' };
    const first = await startHeraldProcess([], env);
    const admin = async (url: string, key: string | undefined, method: string, path: string, body?: unknown) => {
      const res = await request(`${url}${path}`, {
        method: method as 'POST',
        headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.statusCode, json: (await res.body.json()) as any };
    };
    // The operator commands reach the running process through its admin socket.
    const { runOperatorOp } = await import('../src/cli/operator-client.ts');
    const { loadConfig } = await import('../src/config.ts');
    const config = loadConfig({ env: { HERALD_DATA_DIR: dataDir } });
    const account = (await runOperatorOp(config, 'accounts.create', { name: 'Acme' })) as { id: string };
    const { key } = (await runOperatorOp(config, 'keys.create', { account: account.id })) as { key: string };
    const ep = await admin(first.url!, key, 'POST', '/v1/endpoints', { url: receiver.url, event_types: ['shipment.created'] });
    assert.equal(ep.status, 201);
    const events = Array.from({ length: 200 }, (_, i) => ({ type: 'shipment.created', data: { id: i } }));
    assert.equal((await admin(first.url!, key, 'POST', '/v1/events/batch', { events })).status, 202);
    await receiver.received(40);
    first.child.kill('SIGKILL');
    await first.exited;

    const second = await startHeraldProcess([], env);
    try {
      await receiver.until((rs) => distinctEvents(rs) >= 200);
      assert.ok(receiver.requests.length - 200 <= 16, `duplicates bounded by what was in flight: ${receiver.requests.length - 200}`);
    } finally {
      second.child.kill('SIGTERM');
      assert.equal(await second.exited, 0);
    }
  });
});
