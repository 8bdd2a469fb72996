import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { TEST_KEY } from './helpers/herald.ts';
import { allDelivered, call, printed, publisher, seedAccount, within } from './helpers/faults.ts';
import { CLUSTER_AVAILABLE, startCluster, type Cluster } from './helpers/pg-cluster.ts';
import { startHeraldProcess, type HeraldProcess } from './helpers/process.ts';
import { startReceiver, type Receiver } from './helpers/receiver.ts';

/**
 * Herald on a PostgreSQL server of this file's own, which the tests stop,
 * start, freeze and make read-only under it. The API answers 503
 * database_unavailable (never 500, never a hang), /healthz stays 200, and
 * deliveries resume by themselves when the database is back.
 */
const DATABASE_TIMEOUT_MS = 1_500;

describe('Herald while its PostgreSQL goes away', { skip: !CLUSTER_AVAILABLE && 'needs PostgreSQL 15 binaries (initdb, pg_ctl)' }, () => {
  let cluster: Cluster;
  let receiver: Receiver;
  let key: string;
  const running: HeraldProcess[] = [];
  const env = (extra: Record<string, string> = {}) => ({
    DATABASE_URL: cluster.url,
    HERALD_ENCRYPTION_KEY: TEST_KEY.toString('base64'),
    HERALD_CONCURRENCY: '16',
    HERALD_ENDPOINT_CONCURRENCY: '16',
    HERALD_POLL_MS: '200',
    HERALD_DATABASE_TIMEOUT_MS: String(DATABASE_TIMEOUT_MS),
    // The shortest lease: a claim that a frozen server commits after Herald
    // gave up on it holds its deliveries until the lease runs out.
    HERALD_LEASE_MS: '15000',
    HERALD_LOG_LEVEL: 'silent',
    ...extra,
  });
  async function herald(extra: Record<string, string> = {}): Promise<HeraldProcess> {
    const h = await startHeraldProcess(['--port', '0'], env(extra));
    running.push(h);
    return h;
  }

  before(async () => {
    cluster = await startCluster();
    receiver = await startReceiver();
    receiver.respond({ status: 200 });
  });
  after(async () => {
    for (const h of running) h.child.kill('SIGKILL');
    await Promise.all(running.map((h) => h.exited));
    await receiver?.close();
    await cluster?.remove();
  });

  test('stopped and started again: 503 database_unavailable meanwhile, /healthz 200, deliveries resume, nothing acknowledged is lost', { timeout: 60_000 }, async () => {
    const h = await herald();
    ({ key } = await seedAccount(cluster.url, receiver.url));
    const p = publisher(h.url!, key);
    for (let i = 0; i < 10; i++) assert.equal((await p.publish()).status, 202);
    await within(receiver.until(allDelivered(p.acknowledged)), 15_000, 'deliveries before the stop');

    await cluster.stop();
    for (let i = 0; i < 3; i++) {
      const answer = await p.publish();
      assert.equal(answer.status, 503, JSON.stringify(answer.json));
      assert.equal(answer.json.code, 'database_unavailable');
      assert.equal(answer.headers.get('content-type'), 'application/problem+json; charset=utf-8');
      assert.ok(Number(answer.headers.get('retry-after')) > 0);
      assert.ok(answer.ms < 2_000, `answered in ${answer.ms} ms`);
    }
    const health = await call(`${h.url}/healthz`, 'GET');
    assert.equal(health.status, 200);
    assert.ok(health.ms < 2_000);
    const ready = await call(`${h.url}/readyz`, 'GET');
    assert.equal(ready.status, 503);
    assert.equal(ready.json.code, 'database_unavailable');
    assert.ok(ready.ms < 4_000, `readyz answered in ${ready.ms} ms`);

    await cluster.start();
    // The first publishes after the start may still meet a connection the restart broke.
    const deadline = Date.now() + 15_000;
    while (p.acknowledged.size < 20 && Date.now() < deadline) await p.publish();
    assert.ok(p.acknowledged.size >= 20, `publishing works again: ${JSON.stringify([...p.statuses])}`);
    assert.equal((await call(`${h.url}/readyz`, 'GET')).status, 200);
    await within(receiver.until(allDelivered(p.acknowledged)), 30_000, 'every acknowledged event delivered after the restart');
    assert.equal(h.child.exitCode, null, 'Herald still runs');
    assert.ok(![...p.statuses.keys()].some((s) => s >= 500 && s !== 503), `no 500s: ${JSON.stringify([...p.statuses])}`);
  });

  test('frozen (SIGSTOP): publish answers 503 within the query timeout, /healthz at once; it recovers after SIGCONT', { timeout: 60_000 }, async () => {
    const h = running[0]!;
    const p = publisher(h.url!, key);
    assert.equal((await p.publish()).status, 202);
    cluster.freeze();
    try {
      const answer = await p.publish();
      assert.equal(answer.status, 503, JSON.stringify(answer.json));
      assert.equal(answer.json.code, 'database_unavailable');
      assert.ok(answer.ms < DATABASE_TIMEOUT_MS + 1_500, `answered in ${answer.ms} ms`);
      const health = await call(`${h.url}/healthz`, 'GET');
      assert.equal(health.status, 200);
      assert.ok(health.ms < 1_000, `healthz answered in ${health.ms} ms`);
      const ready = await call(`${h.url}/readyz`, 'GET');
      assert.equal(ready.status, 503);
      assert.equal(ready.json.reason, 'timeout');
      assert.ok(ready.ms < 4_000, `readyz answered in ${ready.ms} ms`);
    } finally {
      cluster.thaw();
    }
    const deadline = Date.now() + 15_000;
    while (p.acknowledged.size < 5 && Date.now() < deadline) await p.publish();
    assert.ok(p.acknowledged.size >= 5, `publishing works again: ${JSON.stringify([...p.statuses])}`);
    await within(receiver.until(allDelivered(p.acknowledged)), 30_000, 'deliveries after the thaw');
    assert.equal(h.child.exitCode, null);
  });

  test('read-only (default_transaction_read_only): publish 503 read_only, /readyz 503', { timeout: 60_000 }, async () => {
    const h = running[0]!;
    const admin = new pg.Client({ connectionString: cluster.url });
    await admin.connect();
    // The setting reaches new sessions only: Herald's are ended so that it reconnects into it.
    const terminate = () => admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()');
    try {
      await admin.query('ALTER DATABASE postgres SET default_transaction_read_only = on');
      await terminate();
      const p = publisher(h.url!, key);
      let answer = await p.publish();
      // A publish that met a connection the termination broke is 503 unreachable; the next one connects read-only.
      if (answer.json?.reason === 'unreachable') answer = await p.publish();
      assert.equal(answer.status, 503, JSON.stringify(answer.json));
      assert.equal(answer.json.code, 'database_unavailable');
      assert.equal(answer.json.reason, 'read_only');
      const ready = await call(`${h.url}/readyz`, 'GET');
      assert.equal(ready.status, 503);
      assert.equal(ready.json.reason, 'read_only');
      assert.equal((await call(`${h.url}/healthz`, 'GET')).status, 200);
    } finally {
      await admin.query('ALTER DATABASE postgres RESET default_transaction_read_only');
      await terminate();
      await admin.end();
    }
    const p = publisher(h.url!, key);
    const deadline = Date.now() + 10_000;
    while (p.acknowledged.size < 3 && Date.now() < deadline) await p.publish();
    assert.ok(p.acknowledged.size >= 3);
    await within(receiver.until(allDelivered(p.acknowledged)), 30_000, 'deliveries after read-only');
    assert.equal(h.child.exitCode, null);
  });

  test('a stop while the database is down ends within HERALD_SHUTDOWN_TIMEOUT_MS; a second signal exits at once', { timeout: 60_000 }, async () => {
    // Answers that take a while, so results wait to be written when the database goes.
    receiver.respond({ status: 200, delayMs: 800 });
    const first = running[0]!;
    first.child.kill('SIGTERM');
    assert.equal(await within(first.exited, 20_000, 'a clean stop'), 0);
    const h = await herald({ HERALD_SHUTDOWN_TIMEOUT_MS: '3000' });
    const p = publisher(h.url!, key);
    const before = receiver.requests.length;
    for (let i = 0; i < 5; i++) assert.equal((await p.publish()).status, 202);
    await within(receiver.received(before + 1), 10_000, 'a delivery in flight');
    await cluster.stop();
    const started = performance.now();
    h.child.kill('SIGTERM');
    const code = await within(h.exited, 10_000, 'the bounded stop');
    const took = performance.now() - started;
    assert.ok(took < 3_000 + 2_500, `stopped in ${took} ms`);
    // 1 when it gave up on writing results (0 if everything was written within the bound).
    assert.ok(code === 0 || code === 1, `exit code ${code}`);

    // Frozen, with a long bound: only the second signal ends it quickly.
    await cluster.start();
    receiver.respond({ status: 200 });
    const patient = await herald({ HERALD_SHUTDOWN_TIMEOUT_MS: '60000', HERALD_DATABASE_TIMEOUT_MS: '30000' });
    const q = publisher(patient.url!, key);
    assert.equal((await q.publish()).status, 202);
    cluster.freeze();
    try {
      patient.child.kill('SIGTERM');
      await within(printed(patient.child, patient.stderr, /SIGTERM: finishing/), 5_000, 'the first signal taken');
      assert.equal(patient.child.exitCode, null, 'the first signal waits for the database');
      const again = performance.now();
      patient.child.kill('SIGINT');
      await within(patient.exited, 2_000, 'the second signal');
      assert.ok(performance.now() - again < 1_500);
      assert.match(patient.stderr(), /SIGINT again: exiting now/);
    } finally {
      cluster.thaw();
    }
  });
});
