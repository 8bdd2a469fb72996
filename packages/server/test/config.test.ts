import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join, resolve } from 'node:path';
import { DEFAULT_RETRY, loadConfig } from '../src/config.ts';
import { ConfigError } from '../src/errors.ts';

const KEY = Buffer.alloc(32, 1).toString('base64');

function refused(env: Record<string, string>, setting: string, flags = {}): void {
  assert.throws(
    () => loadConfig({ env, flags }),
    (err: unknown) => {
      assert.ok(err instanceof ConfigError, `a ConfigError, got ${String(err)}`);
      assert.equal(err.setting, setting);
      assert.ok(err.message.startsWith(`${setting}: `), `the message names ${setting}: ${err.message}`);
      return true;
    },
  );
}

describe('config', () => {
  test('defaults: embedded database in ./data, port 8080, the published limits', () => {
    const c = loadConfig({ env: {} });
    assert.equal(c.role, 'all');
    assert.equal(c.host, '127.0.0.1');
    assert.equal(c.port, 8080);
    assert.equal(c.dataDir, resolve('data'));
    assert.equal(c.databaseUrl, undefined);
    assert.equal(c.encryptionKey, undefined);
    assert.equal(c.logLevel, 'info');
    assert.equal(c.maxBodyBytes, 1024 * 1024);
    assert.equal(c.bodyTimeoutMs, 30_000);
    assert.equal(c.rateLimits.unauthenticatedPerMinute, 60);
    assert.equal(c.dispatcher.requestTimeoutMs, 10_000);
    assert.equal(c.dispatcher.disableAfter, 20);
    assert.equal(c.dispatcher.retry.maxRetries, 6);
    assert.deepEqual({ ...c.dispatcher.retry }, { ...DEFAULT_RETRY });
    // 16 hanging endpoints fill a worker either way; 64 slots let one endpoint answering in 50 ms take 1,280 requests/s.
    assert.deepEqual([c.dispatcher.concurrency, c.dispatcher.endpointConcurrency, c.dispatcher.originConcurrency], [1024, 64, 64]);
  });

  test('HERALD_TRUSTED_PROXIES: none by default; addresses and CIDR ranges, a bare address being a range of one', () => {
    assert.deepEqual(loadConfig({ env: {} }).trustedProxies, []);
    assert.deepEqual(loadConfig({ env: { HERALD_TRUSTED_PROXIES: '10.0.0.1, 172.16.0.0/12 fd00::/8' } }).trustedProxies, ['10.0.0.1/32', '172.16.0.0/12', 'fd00::/8']);
    refused({ HERALD_TRUSTED_PROXIES: 'proxy.internal' }, 'HERALD_TRUSTED_PROXIES');
    refused({ HERALD_TRUSTED_PROXIES: '10.0.0.0/33' }, 'HERALD_TRUSTED_PROXIES');
  });

  test('environment values are read and flags win over them', () => {
    const c = loadConfig({
      env: {
        HERALD_ROLE: 'worker',
        HERALD_HOST: '0.0.0.0',
        HERALD_PORT: '9000',
        HERALD_DATA_DIR: '/var/lib/herald',
        DATABASE_URL: 'postgres://herald@db:5432/herald',
        HERALD_ENCRYPTION_KEY: KEY,
        HERALD_LOG_LEVEL: 'warn',
        HERALD_MAX_BODY_BYTES: '2048',
        HERALD_CONCURRENCY: '64',
        HERALD_ENDPOINT_CONCURRENCY: '4',
        HERALD_ORIGIN_CONCURRENCY: '12',
        HERALD_LEASE_MS: '30000',
        HERALD_POLL_MS: '250',
        HERALD_RETRY_BASE_MS: '10',
        HERALD_RETRY_FACTOR: '2.5',
        HERALD_RETRY_CAP_MS: '1000',
        HERALD_RETRY_JITTER: '0',
      },
      flags: { role: 'api', port: '0', logLevel: 'debug' },
    });
    assert.equal(c.role, 'api');
    assert.equal(c.port, 0);
    assert.equal(c.logLevel, 'debug');
    assert.equal(c.host, '0.0.0.0');
    assert.equal(c.dataDir, '/var/lib/herald');
    assert.equal(c.databaseUrl, 'postgres://herald@db:5432/herald');
    assert.ok(c.encryptionKey?.equals(Buffer.alloc(32, 1)));
    assert.equal(c.maxBodyBytes, 2048);
    assert.deepEqual(
      [c.dispatcher.concurrency, c.dispatcher.endpointConcurrency, c.dispatcher.originConcurrency, c.dispatcher.leaseMs, c.dispatcher.pollMs],
      [64, 4, 12, 30_000, 250],
    );
    assert.deepEqual({ ...c.dispatcher.retry }, { baseMs: 10, factor: 2.5, capMs: 1000, jitter: 0, maxRetries: 6 });
  });

  test('the per-endpoint cap spans all workers, so one worker\'s HERALD_CONCURRENCY neither lowers its default nor bounds it', () => {
    assert.deepEqual([loadConfig({ env: { HERALD_CONCURRENCY: '16' } }).dispatcher.endpointConcurrency], [64]);
    assert.deepEqual([loadConfig({ env: { HERALD_CONCURRENCY: '16', HERALD_ENDPOINT_CONCURRENCY: '32' } }).dispatcher.endpointConcurrency], [32]);
    refused({ HERALD_ENDPOINT_CONCURRENCY: '0' }, 'HERALD_ENDPOINT_CONCURRENCY');
  });

  test('a relative data directory is taken from where npm was started (INIT_CWD), else the working directory', () => {
    assert.equal(loadConfig({ env: { INIT_CWD: '/home/ops/herald' } }).dataDir, '/home/ops/herald/data');
    assert.equal(loadConfig({ env: { INIT_CWD: '/home/ops/herald', HERALD_DATA_DIR: 'store' } }).dataDir, '/home/ops/herald/store');
    assert.equal(loadConfig({ env: { INIT_CWD: '/home/ops/herald' }, flags: { dataDir: '/srv/h' } }).dataDir, '/srv/h');
    assert.equal(loadConfig({ env: { HERALD_DATA_DIR: 'store' } }).dataDir, join(process.cwd(), 'store'));
  });

  test('the result is frozen, all the way down', () => {
    const c = loadConfig({ env: {} });
    assert.ok(Object.isFrozen(c) && Object.isFrozen(c.dispatcher) && Object.isFrozen(c.dispatcher.retry));
  });

  const bad: Array<[string, Record<string, string>, string]> = [
    ['port not a number', { HERALD_PORT: 'eighty' }, '--port / HERALD_PORT'],
    ['port out of range', { HERALD_PORT: '70000' }, '--port / HERALD_PORT'],
    ['negative port', { HERALD_PORT: '-1' }, '--port / HERALD_PORT'],
    ['unknown role', { HERALD_ROLE: 'boss' }, '--role / HERALD_ROLE'],
    ['unknown log level', { HERALD_LOG_LEVEL: 'loud' }, '--log-level / HERALD_LOG_LEVEL'],
    ['body limit too small', { HERALD_MAX_BODY_BYTES: '10' }, 'HERALD_MAX_BODY_BYTES'],
    ['body timeout too short', { HERALD_BODY_TIMEOUT_MS: '10' }, 'HERALD_BODY_TIMEOUT_MS'],
    ['unauthenticated limit not a number', { HERALD_UNAUTHENTICATED_RATE_LIMIT: 'some' }, 'HERALD_UNAUTHENTICATED_RATE_LIMIT'],
    ['fractional concurrency', { HERALD_CONCURRENCY: '1.5' }, 'HERALD_CONCURRENCY'],
    ['zero concurrency', { HERALD_CONCURRENCY: '0' }, 'HERALD_CONCURRENCY'],
    ['zero origin concurrency', { HERALD_ORIGIN_CONCURRENCY: '0' }, 'HERALD_ORIGIN_CONCURRENCY'],
    ['lease too short', { HERALD_LEASE_MS: '1000' }, 'HERALD_LEASE_MS'],
    ['poll not a number', { HERALD_POLL_MS: 'often' }, 'HERALD_POLL_MS'],
    ['retry base zero', { HERALD_RETRY_BASE_MS: '0' }, 'HERALD_RETRY_BASE_MS'],
    ['retry factor below one', { HERALD_RETRY_FACTOR: '0.5' }, 'HERALD_RETRY_FACTOR'],
    ['retry factor not a number', { HERALD_RETRY_FACTOR: 'fast' }, 'HERALD_RETRY_FACTOR'],
    ['retry cap not a number', { HERALD_RETRY_CAP_MS: '1d' }, 'HERALD_RETRY_CAP_MS'],
    ['jitter above one half', { HERALD_RETRY_JITTER: '0.9' }, 'HERALD_RETRY_JITTER'],
    ['encryption key too short', { HERALD_ENCRYPTION_KEY: Buffer.alloc(16).toString('base64') }, 'HERALD_ENCRYPTION_KEY'],
    ['encryption key not base64 of 32 bytes', { HERALD_ENCRYPTION_KEY: 'correct horse battery staple' }, 'HERALD_ENCRYPTION_KEY'],
    ['database URL not a URL', { DATABASE_URL: 'localhost:5432', HERALD_ENCRYPTION_KEY: KEY }, 'DATABASE_URL'],
    ['database URL of another database', { DATABASE_URL: 'mysql://root@db/herald', HERALD_ENCRYPTION_KEY: KEY }, 'DATABASE_URL'],
  ];
  for (const [what, env, setting] of bad) {
    test(`refused, naming ${setting}: ${what}`, () => refused(env, setting));
  }

  test('a bad flag is refused with the flag named', () => {
    refused({}, '--port / HERALD_PORT', { port: 'x' });
    refused({}, '--role / HERALD_ROLE', { role: 'everything' });
  });

  test('DATABASE_URL without HERALD_ENCRYPTION_KEY is refused, and the message says how to make a key', () => {
    for (const url of ['postgres://herald@db:5432/herald', 'postgresql://herald@db/herald']) {
      assert.throws(
        () => loadConfig({ env: { DATABASE_URL: url } }),
        (err: unknown) => err instanceof ConfigError && err.setting === 'HERALD_ENCRYPTION_KEY' && /DATABASE_URL/.test(err.message) && /openssl rand -base64 32/.test(err.message),
      );
    }
    assert.equal(loadConfig({ env: { DATABASE_URL: 'postgresql://herald@db/herald', HERALD_ENCRYPTION_KEY: KEY } }).databaseUrl, 'postgresql://herald@db/herald');
  });

  test('development mode is refused unless Herald listens on this machine only', () => {
    for (const host of ['127.0.0.1', '127.0.0.2', 'localhost', 'LOCALHOST', '::1', '[::1]', '0:0:0:0:0:0:0:1', '::ffff:127.0.0.1']) {
      assert.equal(loadConfig({ env: { HERALD_DEV: '1', HERALD_HOST: host } }).dev, true, host);
    }
    assert.equal(loadConfig({ flags: { dev: true } }).host, '127.0.0.1', 'the default host is loopback');
    for (const host of ['0.0.0.0', '::', '192.168.1.20', 'herald.example.com', 'localhost.example.com', '::ffff:10.0.0.1']) {
      for (const args of [{ env: { HERALD_DEV: '1', HERALD_HOST: host } }, { env: {}, flags: { dev: true, host } }]) {
        assert.throws(
          () => loadConfig(args),
          (err: unknown) =>
            err instanceof ConfigError &&
            err.setting === '--dev / HERALD_DEV' &&
            err.message.includes(`HERALD_HOST is ${host}`) &&
            /set it to localhost, 127\.0\.0\.1 or ::1; on a server, run without --dev/.test(err.message),
          host,
        );
      }
    }
    // A developer's own PostgreSQL is fine.
    const pg = loadConfig({ env: { HERALD_DEV: '1', DATABASE_URL: 'postgres://localhost/herald', HERALD_ENCRYPTION_KEY: Buffer.alloc(32, 1).toString('base64') } });
    assert.equal(pg.dev, true);
  });

  test('empty values count as unset', () => {
    const c = loadConfig({ env: { HERALD_PORT: '', DATABASE_URL: '', HERALD_ENCRYPTION_KEY: '', HERALD_ROLE: '' } });
    assert.equal(c.port, 8080);
    assert.equal(c.databaseUrl, undefined);
    assert.equal(c.role, 'all');
  });

  test('metrics: off the API port and no port of their own by default; each setting checked', () => {
    const c = loadConfig({ env: {} });
    assert.deepEqual({ ...c.metrics }, { port: undefined, token: undefined, endpointLabels: false });
    assert.equal(c.logFormat, 'json');
    const set = loadConfig({
      env: { HERALD_METRICS_PORT: '9464', HERALD_METRICS_TOKEN: 'a'.repeat(16), HERALD_METRICS_ENDPOINT_LABELS: '1', HERALD_LOG_FORMAT: 'pretty' },
    });
    assert.deepEqual({ ...set.metrics }, { port: 9464, token: 'a'.repeat(16), endpointLabels: true });
    assert.equal(set.logFormat, 'pretty');
    assert.equal(loadConfig({ env: { HERALD_METRICS_PORT: '0' } }).metrics.port, 0, '0 picks a free port');
    for (const bad of ['http', '-1', '65536', '9464.5']) refused({ HERALD_METRICS_PORT: bad }, 'HERALD_METRICS_PORT');
    refused({ HERALD_METRICS_PORT: '8080' }, 'HERALD_METRICS_PORT');
    refused({ HERALD_METRICS_PORT: '9000', HERALD_PORT: '9000' }, 'HERALD_METRICS_PORT');
    assert.equal(loadConfig({ env: { HERALD_METRICS_PORT: '8080', HERALD_ROLE: 'worker' } }).metrics.port, 8080, 'a worker has no API port');
    for (const bad of ['short', 'has a space in it!!', `${'x'.repeat(20)}\u00e9`]) refused({ HERALD_METRICS_TOKEN: bad }, 'HERALD_METRICS_TOKEN');
    refused({ HERALD_METRICS_ENDPOINT_LABELS: 'yes' }, 'HERALD_METRICS_ENDPOINT_LABELS');
    refused({ HERALD_LOG_FORMAT: 'text' }, 'HERALD_LOG_FORMAT');
  });

  test('a refused metrics token is not repeated in the message', () => {
    assert.throws(() => loadConfig({ env: { HERALD_METRICS_TOKEN: 'tiny-secret' } }), (err: Error) => !err.message.includes('tiny-secret'));
  });
});
