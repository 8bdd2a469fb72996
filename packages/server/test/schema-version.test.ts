import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ENGINES } from './helpers/engines.ts';
import { alarmData, createTestHerald, type TestHerald } from './helpers/herald.ts';
import { prepareDatabase } from '../src/storage/open.ts';
import { knownSchemaVersion, SchemaTooNewError } from '../src/storage/migrate.ts';

for (const engine of ENGINES) {
  describe(`a process older than the database's schema stops instead of misreading it [${engine}]`, () => {
    let h: TestHerald;
    before(async () => (h = await createTestHerald(engine)));
    after(() => h.close());

    test('start-up refuses, and a paused worker stops claiming; what a newer Herald wrote is left alone', async () => {
      const endpoint = await h.api('POST', '/v1/endpoints', { url: 'https://schema.example.com/hook', event_types: ['alarm.created'] });
      assert.equal(endpoint.status, 201);
      const known = await knownSchemaVersion();
      // A newer Herald migrates the database while this one runs.
      await h.db.query(`INSERT INTO herald_migrations (version, name) VALUES ($1, 'from_a_newer_herald')`, [known + 1]);

      await assert.rejects(prepareDatabase(h.db), (err: unknown) => {
        assert.ok(err instanceof SchemaTooNewError);
        assert.equal(err.message.startsWith(`the database was migrated by a newer Herald (schema version ${known + 1}; this one knows up to ${known}): upgrade this process`), true, err.message);
        return true;
      });

      const published = await h.api('POST', '/v1/events', { type: 'alarm.created', data: alarmData() });
      assert.equal(published.status, 202);
      // What the schema check does on finding it: the worker is paused for good.
      h.dispatcher.pause('the database was migrated by a newer Herald');
      assert.equal((await h.dispatcher.tick()).claimed, 0, 'nothing is claimed');
      const { rows } = await h.db.query<{ state: string; in_flight: boolean }>(
        'SELECT state, EXISTS (SELECT 1 FROM in_flight f WHERE f.delivery_id = d.id) AS in_flight FROM deliveries d WHERE event_id = $1',
        [published.json.id],
      );
      assert.equal(rows.length, 1);
      assert.ok(rows.every((r) => r.state === 'pending' && !r.in_flight), 'left for the newer workers');

      // It stays paused: the process must be replaced, not wait for the database to go back.
      await h.db.query('DELETE FROM herald_migrations WHERE version = $1', [known + 1]);
      assert.equal((await h.dispatcher.tick()).claimed, 0);
    });
  });
}
