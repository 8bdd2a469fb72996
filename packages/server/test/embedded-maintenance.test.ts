import { after, before, describe, mock, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestHerald, type TestHerald } from './helpers/herald.ts';
import { startReceiver, type Receiver } from './helpers/receiver.ts';
import { startEmbeddedMaintenance, vacuumEmbedded } from '../src/storage/maintenance.ts';

// PGlite only: it runs PostgreSQL in single-user mode, where autovacuum never
// runs. (On PostgreSQL, autovacuum does this work.)
describe('the embedded engine is vacuumed and analysed by Herald [pglite]', () => {
  let h: TestHerald;
  let receiver: Receiver;

  before(async () => {
    h = await createTestHerald('pglite');
    receiver = await startReceiver();
    await h.api('POST', '/v1/endpoints', { url: receiver.url, event_types: ['shipment.created'] });
    for (let i = 0; i < 30; i++) await h.api('POST', '/v1/events', { type: 'shipment.created', data: { id: `m-${i}` } });
    await h.dispatcher.tick();
  });
  after(async () => {
    await h.close();
    await receiver.close();
  });

  async function stats() {
    const { rows } = await h.db.query<{ reltuples: number; relallvisible: number }>(
      `SELECT reltuples::float8 AS reltuples, relallvisible FROM pg_class WHERE relname = 'deliveries'`,
    );
    return rows[0]!;
  }

  test('without it the planner has no statistics; one pass gives them and marks pages all-visible', async () => {
    assert.equal((await stats()).reltuples, -1, 'PGlite never analysed the table on its own');
    await vacuumEmbedded(h.db);
    const after = await stats();
    assert.equal(after.reltuples, 30);
    assert.ok(after.relallvisible > 0, 'VACUUM ran: pages are marked all-visible');
  });

  test('passes run on the interval, and stopping waits for one under way', async () => {
    mock.timers.enable({ apis: ['setInterval'] });
    try {
      let errors = 0;
      const stop = startEmbeddedMaintenance(h.db, { intervalMs: 1_000, onError: () => (errors += 1) });
      for (let i = 0; i < 20; i++) await h.api('POST', '/v1/events', { type: 'shipment.created', data: { id: `n-${i}` } });
      assert.equal((await stats()).reltuples, 30, 'no pass before the interval');
      mock.timers.tick(1_000);
      await stop();
      assert.equal((await stats()).reltuples, 50);
      assert.equal(errors, 0);
    } finally {
      mock.timers.reset();
    }
  });
});
