import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { createScratchPostgres, ENGINES } from './helpers/engines.ts';
import { allDelivered, publisher, seedAccount, within } from './helpers/faults.ts';
import { TEST_KEY } from './helpers/herald.ts';
import { startHeraldProcess, type HeraldProcess } from './helpers/process.ts';
import { startReceiver, type Receiver } from './helpers/receiver.ts';

/**
 * Every connection Herald holds is terminated by the server
 * (pg_terminate_backend: what a restart, idle_session_timeout or a proxy's
 * reset does to it), three times while events are published and delivered.
 * The processes keep running and every event Herald acknowledged arrives.
 */
describe('every Herald connection terminated, three times, mid-run', { skip: !ENGINES.includes('postgres') && 'set HERALD_TEST_DATABASE_URL' }, () => {
  let scratch: { url: string; drop(): Promise<void> };
  let receiver: Receiver;
  let admin: pg.Client;
  const processes: HeraldProcess[] = [];

  before(async () => {
    scratch = await createScratchPostgres();
    receiver = await startReceiver();
    // A receiver that takes a moment, so deliveries are in flight when connections go.
    receiver.respond({ status: 200, delayMs: 20 });
    admin = new pg.Client({ connectionString: scratch.url });
    await admin.connect();
  });
  after(async () => {
    for (const p of processes) p.child.kill('SIGKILL');
    await Promise.all(processes.map((p) => p.exited));
    await admin?.end();
    await receiver?.close();
    await scratch?.drop();
  });

  test('api and worker processes keep running; no acknowledged event is lost; deliveries continue', { timeout: 80_000 }, async () => {
    const env = {
      DATABASE_URL: scratch.url,
      HERALD_ENCRYPTION_KEY: TEST_KEY.toString('base64'),
      HERALD_CONCURRENCY: '16',
      HERALD_ENDPOINT_CONCURRENCY: '16',
      HERALD_POLL_MS: '200',
      HERALD_DATABASE_TIMEOUT_MS: '3000',
      HERALD_LOG_LEVEL: 'silent',
    };
    const api = await startHeraldProcess(['--role', 'api', '--port', '0'], env);
    processes.push(api);
    processes.push(await startHeraldProcess(['--role', 'worker'], env));
    processes.push(await startHeraldProcess(['--role', 'worker'], env));
    const { key } = await seedAccount(scratch.url, receiver.url);
    const p = publisher(api.url!, key);

    // Publishing goes on all the while, one request after another.
    let publishing = true;
    const loop = (async () => {
      while (publishing) await p.publish();
    })();
    const terminated: number[] = [];
    try {
      for (let round = 0; round < 3; round++) {
        // Some deliveries between rounds: the workers are at work when their connections go.
        const delivered = receiver.requests.length;
        await within(receiver.received(delivered + 20), 30_000, `deliveries before round ${round + 1}`);
        const { rowCount } = await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()');
        terminated.push(rowCount ?? 0);
      }
      // Deliveries continue after the last round.
      const delivered = receiver.requests.length;
      await within(receiver.received(delivered + 20), 30_000, 'deliveries after the last round');
    } finally {
      publishing = false;
      await loop;
    }
    // Each round ended the API's connections and each worker's, LISTEN included.
    for (const n of terminated) assert.ok(n >= 3, `connections terminated per round: ${terminated.join(', ')}`);
    for (const proc of processes) assert.equal(proc.child.exitCode, null, `still running:\n${proc.stderr()}`);
    assert.ok(p.acknowledged.size >= 60, `publishes acknowledged: ${JSON.stringify([...p.statuses])}`);
    assert.ok(![...p.statuses.keys()].some((s) => s >= 500 && s !== 503), `no 500s: ${JSON.stringify([...p.statuses])}`);
    await within(receiver.until(allDelivered(p.acknowledged)), 30_000, 'every acknowledged event delivered');
  });

  test('a worker whose connections are all gone, and cannot come back for a while, keeps running until they can', { timeout: 60_000 }, async () => {
    const env = { DATABASE_URL: scratch.url, HERALD_ENCRYPTION_KEY: TEST_KEY.toString('base64'), HERALD_POLL_MS: '200', HERALD_LOG_LEVEL: 'silent' };
    const worker = await startHeraldProcess(['--role', 'worker'], env);
    processes.push(worker);
    const name = new URL(scratch.url).pathname.slice(1);
    // From another database: PostgreSQL refuses this for the database a connection is on.
    const other = new URL(scratch.url);
    other.pathname = '/postgres';
    const server = new pg.Client({ connectionString: other.toString() });
    await server.connect();
    // No socket left open and no way to open one: what keeps the process
    // alive is `herald start` itself, not a connection or a retry's timer.
    await server.query(`ALTER DATABASE ${pg.escapeIdentifier(name)} ALLOW_CONNECTIONS false`);
    try {
      // The worker's, not this test's own admin connection.
      const adminPid = (await admin.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      await server.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> $2', [name, adminPid]);
      const exited = await Promise.race([worker.exited.then(() => true), new Promise<false>((r) => setTimeout(() => r(false), 3_000))]);
      assert.equal(exited, false, `the worker exited (${worker.child.exitCode}) while its database refused connections:\n${worker.stderr()}`);
    } finally {
      await server.query(`ALTER DATABASE ${pg.escapeIdentifier(name)} ALLOW_CONNECTIONS true`);
      await server.end();
    }
    assert.equal(worker.child.exitCode, null);
  });
});
