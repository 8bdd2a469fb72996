import { readdirSync } from 'node:fs';
import { readFile, readdir } from 'node:fs/promises';
import type { Db, Queryable } from './db.ts';

const MIGRATIONS_DIR = new URL('./migrations/', import.meta.url);
/** Arbitrary constant naming Herald's migration lock among advisory locks. */
const MIGRATION_LOCK_KEY = 727_274_001;

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** The migration files among a directory's entries, in the order they apply. */
function migrationFiles(entries: readonly string[]): string[] {
  return entries.filter((f) => /^\d{3}_[a-z0-9_]+\.sql$/.test(f)).sort();
}

export async function loadMigrations(): Promise<Migration[]> {
  const files = migrationFiles(await readdir(MIGRATIONS_DIR));
  return Promise.all(
    files.map(async (file) => ({
      version: Number(file.slice(0, 3)),
      name: file.slice(4, -4),
      sql: await readFile(new URL(file, MIGRATIONS_DIR), 'utf8'),
    })),
  );
}

/**
 * The newest migration this code carries, read once as the module loads: the
 * migrations that came with the code this process runs, even if a newer
 * Herald is later installed over it on disk.
 */
const KNOWN_SCHEMA_VERSION = Math.max(0, ...migrationFiles(readdirSync(MIGRATIONS_DIR)).map((f) => Number(f.slice(0, 3))));

/** The newest migration this code carries. */
export async function knownSchemaVersion(): Promise<number> {
  return KNOWN_SCHEMA_VERSION;
}

/** A newer Herald has migrated the database past what this process knows. */
export class SchemaTooNewError extends Error {
  constructor(
    readonly applied: number,
    readonly known: number,
  ) {
    super(
      `the database was migrated by a newer Herald (schema version ${applied}; this one knows up to ${known}): upgrade this process. ` +
        'Stop every older Herald process before the first newer one starts (docs/running.md, "Several workers")',
    );
    this.name = 'SchemaTooNewError';
  }
}

/**
 * Throws SchemaTooNewError when the database holds a migration this code does
 * not know: an older process beside a newer one would misread what the newer
 * one writes (migration 008 moved the lease to a column of its own, say).
 */
export async function assertSchemaKnown(db: Queryable): Promise<void> {
  const [{ rows }, knows] = await Promise.all([db.query<{ v: number | null }>('SELECT max(version) AS v FROM herald_migrations'), knownSchemaVersion()]);
  const applied = rows[0]?.v ?? 0;
  if (applied > knows) throw new SchemaTooNewError(applied, knows);
}

/**
 * Applies the numbered, forward-only migrations not yet applied. Each runs in
 * its own transaction under a transaction-scoped advisory lock, so several
 * processes starting at once apply each migration exactly once.
 * Returns the versions it applied.
 */
export async function migrate(db: Db): Promise<number[]> {
  // Under the lock too: CREATE TABLE IF NOT EXISTS is not safe against a
  // concurrent CREATE (the loser fails on pg_type's unique index).
  await db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
    await tx.query(`CREATE TABLE IF NOT EXISTS herald_migrations (
      version integer PRIMARY KEY,
      name text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
  });
  const applied: number[] = [];
  for (const migration of await loadMigrations()) {
    const ran = await db.transaction(async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
      const done = await tx.query('SELECT 1 FROM herald_migrations WHERE version = $1', [migration.version]);
      if (done.rowCount > 0) return false;
      // Statements run one by one: the extended protocol takes one statement a call.
      for (const statement of splitStatements(migration.sql)) await tx.query(statement);
      await tx.query('INSERT INTO herald_migrations (version, name) VALUES ($1, $2)', [migration.version, migration.name]);
      return true;
    });
    if (ran) applied.push(migration.version);
  }
  return applied;
}

/**
 * Splits a migration into statements: on a semicolon at the end of a line,
 * outside dollar-quoted bodies (a function's `$$ ... $$` keeps its own
 * semicolons). Comments (`--` to the end of a line) are dropped. Migrations
 * keep to what this reads: no `--` or `$$` inside string literals.
 */
export function splitStatements(sql: string): string[] {
  const statements: string[] = [];
  let current = '';
  let quote: string | null = null;
  for (const line of sql.replace(/--[^\n]*$/gm, '').split('\n')) {
    current += `${line}\n`;
    for (const tag of line.match(/\$(?:[A-Za-z_][A-Za-z0-9_]*)?\$/g) ?? []) {
      if (quote === null) quote = tag;
      else if (tag === quote) quote = null;
    }
    if (quote === null && /;\s*$/.test(line)) {
      statements.push(current.trim().replace(/;$/, '').trim());
      current = '';
    }
  }
  if (current.trim()) statements.push(current.trim());
  return statements.filter(Boolean);
}
