import { HeraldError, invalidField } from '../errors.ts';
import { EVENT_TYPE_NAME, type EventTypeDefinition } from '../core/event-types.ts';
import type { SchemaValidator } from '../core/schema-validator.ts';
import type { Queryable } from '../storage/db.ts';
import { insertEventType, type EventTypeRow } from '../storage/queries/event-types.ts';

/** An event type as the API and the operator commands show it. */
export function eventTypeJson(t: EventTypeRow) {
  return { name: t.name, description: t.description, builtin: t.builtin, schema: t.schema, example: t.example };
}

/**
 * Adds an operator-defined event type. The schema must compile, and an
 * example, when given, must satisfy it.
 */
export async function addEventType(
  db: Queryable,
  validator: SchemaValidator,
  input: { name: unknown; description?: unknown; schema?: unknown; example?: unknown },
): Promise<EventTypeRow> {
  const { name } = input;
  if (typeof name !== 'string' || !EVENT_TYPE_NAME.test(name)) {
    throw invalidField('name', 'must be lowercase dotted words such as "container.sealed"');
  }
  const schema = input.schema ?? { type: 'object' };
  if (!schema || typeof schema !== 'object' || Array.isArray(schema)) throw invalidField('schema', 'must be a JSON Schema object');
  try {
    validator.compile(schema);
  } catch (cause) {
    throw new HeraldError('validation_failed', `schema: not a valid JSON Schema: ${(cause as Error).message}`, {
      errors: [{ field: 'schema', message: (cause as Error).message }],
      cause,
    });
  }
  if (input.example !== undefined) {
    const errors = validator.check(schema, input.example, 'example');
    if (errors.length > 0) {
      throw new HeraldError('validation_failed', `example does not match the schema: ${errors.map((e) => `${e.field} ${e.message}`).join('; ')}`, { errors });
    }
  }
  const description = typeof input.description === 'string' ? input.description : '';
  const definition: EventTypeDefinition = { name, description, schema: schema as Record<string, unknown>, example: input.example as Record<string, unknown> };
  const row = await insertEventType(db, definition);
  if (!row) throw new HeraldError('conflict', `event type "${name}" already exists`);
  return row;
}
