import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src/config.ts';
import { startHerald } from '../src/main.ts';
import { createAccount, createApiKey } from '../src/services/accounts.ts';
import { createEndpoint } from '../src/services/endpoints.ts';
import { ENGINES, createTestDb } from './helpers/engines.ts';
import { call, within } from './helpers/faults.ts';
import { TEST_KEY } from './helpers/herald.ts';

for (const engine of ENGINES) {
  describe(`a process that is stopping [${engine}]`, () => {
    // A load balancer must stop sending here as soon as the stop begins, not
    // once the deliveries in flight have finished (up to half the shutdown bound).
    test('answers /readyz and /healthz 503 shutting_down while its deliveries in flight finish', { timeout: 30_000 }, async () => {
      // A receiver that takes the connection and never answers: the delivery stays in flight.
      const sockets = new Set<Socket>();
      let connected!: () => void;
      const firstConnection = new Promise<void>((r) => (connected = r));
      const receiver = createServer((s) => {
        sockets.add(s);
        s.on('error', () => {});
        connected();
      });
      await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
      const port = (receiver.address() as { port: number }).port;
      const dir = mkdtempSync(join(tmpdir(), 'herald-stopping-'));
      const db = engine === 'postgres' ? await createTestDb('postgres') : undefined;
      const config = loadConfig({
        env: {
          HERALD_DATA_DIR: dir,
          HERALD_PORT: '0',
          HERALD_HOST: '127.0.0.1',
          HERALD_LOG_LEVEL: 'silent',
          HERALD_ALLOWED_NETWORKS: '127.0.0.0/8',
          HERALD_SHUTDOWN_TIMEOUT_MS: '3000',
          ...(db ? { DATABASE_URL: db.url!, HERALD_ENCRYPTION_KEY: TEST_KEY.toString('base64') } : {}),
        },
      });
      const herald = await startHerald({ config });
      let closing: Promise<boolean> | undefined;
      try {
        const accountId = (await createAccount(herald.deps.db, 'Acme')).id;
        const { key } = await createApiKey(herald.deps.db, accountId);
        await createEndpoint(herald.deps, accountId, { url: `https://127.0.0.1:${port}/hook`, event_types: ['shipment.created'] });
        assert.equal((await call(`${herald.url}/readyz`, 'GET')).status, 200);
        assert.equal((await call(`${herald.url}/v1/events`, 'POST', key, { type: 'shipment.created', data: { id: 1 } })).status, 202);
        await within(firstConnection, 10_000, 'the delivery reaches the receiver');

        closing = herald.close();
        for (const url of ['/readyz', '/healthz']) {
          const res = await call(`${herald.url}${url}`, 'GET');
          assert.equal(res.status, 503, url);
          assert.equal(res.json.code, 'shutting_down', url);
        }
      } finally {
        for (const s of sockets) s.destroy();
        await (closing ?? herald.close());
        await new Promise((r) => receiver.close(r));
        await db?.close();
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
}
