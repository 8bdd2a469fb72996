import type { Queryable } from '../db.ts';
import type { EventTypeDefinition } from '../../core/event-types.ts';

export interface EventTypeRow {
  name: string;
  description: string;
  schema: Record<string, unknown>;
  example: Record<string, unknown> | null;
  builtin: boolean;
  created_at: Date;
}

const COLUMNS = 'name, description, schema, example, builtin, created_at';

/** Keeps the built-in types as the code defines them. */
export async function upsertBuiltinEventTypes(db: Queryable, types: readonly EventTypeDefinition[]): Promise<void> {
  for (const t of types) {
    await db.query(
      `INSERT INTO event_types (name, description, schema, example, builtin) VALUES ($1, $2, $3, $4, true)
       ON CONFLICT (name) DO UPDATE SET description = EXCLUDED.description, schema = EXCLUDED.schema,
         example = EXCLUDED.example, builtin = true`,
      [t.name, t.description, JSON.stringify(t.schema), JSON.stringify(t.example)],
    );
  }
}

/** Inserts an operator-defined type; returns undefined when the name is taken. */
export async function insertEventType(db: Queryable, t: EventTypeDefinition): Promise<EventTypeRow | undefined> {
  const { rows } = await db.query<EventTypeRow>(
    `INSERT INTO event_types (name, description, schema, example) VALUES ($1, $2, $3, $4)
     ON CONFLICT (name) DO NOTHING RETURNING ${COLUMNS}`,
    [t.name, t.description, JSON.stringify(t.schema), t.example === undefined ? null : JSON.stringify(t.example)],
  );
  return rows[0];
}

/** The catalog by name; a page of it when `page` is given (`after`: the last name of the previous page). */
export async function listEventTypes(db: Queryable, page?: { limit: number; after?: string }): Promise<EventTypeRow[]> {
  return (
    await db.query<EventTypeRow>(`SELECT ${COLUMNS} FROM event_types WHERE ($1::text IS NULL OR name > $1) ORDER BY name LIMIT $2`, [
      page?.after ?? null,
      page?.limit ?? null,
    ])
  ).rows;
}

export async function getEventTypes(db: Queryable, names: readonly string[]): Promise<EventTypeRow[]> {
  return (await db.query<EventTypeRow>(`SELECT ${COLUMNS} FROM event_types WHERE name = ANY($1::text[])`, [names])).rows;
}
