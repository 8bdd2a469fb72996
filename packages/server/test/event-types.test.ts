import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { BUILTIN_EVENT_TYPES } from '../src/core/event-types.ts';
import { HeraldError } from '../src/errors.ts';
import { addEventType } from '../src/services/event-types.ts';
import { ENGINES } from './helpers/engines.ts';
import { createTestHerald, type TestHerald } from './helpers/herald.ts';

const failsOn = (code: string, field?: string) => (err: unknown) =>
  err instanceof HeraldError && err.code === code && (field === undefined || err.errors?.[0]?.field === field);

describe('the built-in catalog', () => {
  test("each type's example satisfies its own schema", async () => {
    const { SchemaValidator } = await import('../src/core/schema-validator.ts');
    const validator = new SchemaValidator();
    for (const t of BUILTIN_EVENT_TYPES) assert.deepEqual(validator.check(t.schema, t.example, 'example'), [], t.name);
  });
});

for (const engine of ENGINES) {
  describe(`the event-type catalog [${engine}]`, () => {
    let h: TestHerald;
    before(async () => {
      h = await createTestHerald(engine);
    });
    after(async () => {
      await h.close();
    });

    test('GET /v1/event-types lists the four published types with schemas and examples', async () => {
      const res = await h.api('GET', '/v1/event-types');
      assert.equal(res.status, 200);
      assert.deepEqual(
        res.json.data.map((t: { name: string }) => t.name),
        ['alarm.created', 'alarm.resolved', 'shipment.completed', 'shipment.created'],
      );
      for (const t of res.json.data) {
        assert.deepEqual(Object.keys(t).sort(), ['builtin', 'description', 'example', 'name', 'schema']);
        assert.equal(t.builtin, true);
        const def = BUILTIN_EVENT_TYPES.find((b) => b.name === t.name)!;
        assert.deepEqual(t.schema, def.schema);
        assert.deepEqual(t.example, def.example);
      }
    });

    test('an operator type is added, listed, subscribable and validated on publish', async () => {
      const row = await addEventType(h.db, h.deps.validator, {
        name: 'container.sealed',
        description: 'A container was sealed',
        schema: { type: 'object', required: ['seal'], properties: { seal: { type: 'string' }, items: { type: 'array', items: { type: 'integer' } } } },
        example: { seal: 'S-1' },
      });
      assert.equal(row.builtin, false);
      const listed = await h.api('GET', '/v1/event-types');
      assert.ok(listed.json.data.some((t: { name: string; builtin: boolean }) => t.name === 'container.sealed' && !t.builtin));

      const ep = await h.api('POST', '/v1/endpoints', { url: 'https://c.example.com/', event_types: ['container.sealed'] });
      assert.equal(ep.status, 201);
      const ok = await h.api('POST', '/v1/events', { type: 'container.sealed', data: { seal: 'S-2' } });
      assert.equal(ok.status, 202);
      assert.equal((await h.db.query('SELECT 1 FROM deliveries WHERE event_id = $1', [ok.json.id])).rowCount, 1);
      const bad = await h.api('POST', '/v1/events', { type: 'container.sealed', data: { seal: 'S-3', items: [1, 'two'] } });
      assert.equal(bad.status, 400);
      assert.deepEqual(bad.json.errors.map((e: { field: string }) => e.field), ['data.items[1]']);
    });

    test('without a schema an operator type takes any object', async () => {
      await addEventType(h.db, h.deps.validator, { name: 'door.opened' });
      assert.equal((await h.api('POST', '/v1/events', { type: 'door.opened', data: { anything: [1, 2] } })).status, 202);
      assert.equal((await h.api('POST', '/v1/events', { type: 'door.opened', data: 'text' })).status, 400);
    });

    test('names, schemas and examples are checked, and a taken name is a conflict', async () => {
      for (const name of ['Container.Sealed', 'sealed', 'container..sealed', '.x', 7, undefined]) {
        await assert.rejects(addEventType(h.db, h.deps.validator, { name }), failsOn('validation_failed', 'name'), String(name));
      }
      await assert.rejects(addEventType(h.db, h.deps.validator, { name: 'a.b', schema: [] }), failsOn('validation_failed', 'schema'));
      await assert.rejects(addEventType(h.db, h.deps.validator, { name: 'a.b', schema: { type: 'no-such-type' } }), failsOn('validation_failed', 'schema'));
      await assert.rejects(
        addEventType(h.db, h.deps.validator, { name: 'a.b', schema: { type: 'object', required: ['x'] }, example: {} }),
        failsOn('validation_failed', 'example.x'),
      );
      await assert.rejects(addEventType(h.db, h.deps.validator, { name: 'alarm.created' }), failsOn('conflict'));
      assert.equal((await h.db.query(`SELECT 1 FROM event_types WHERE name = 'a.b'`)).rowCount, 0);
    });
  });
}
