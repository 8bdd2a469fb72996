import type { Queryable } from '../db.ts';

/** Whether a table exists: the key is checked before migrating, on a database of any schema version. */
async function tableExists(db: Queryable, table: string): Promise<boolean> {
  const { rows } = await db.query<{ present: boolean }>('SELECT to_regclass($1) IS NOT NULL AS present', [table]);
  return rows[0]?.present === true;
}

/** The recorded fingerprint; none before migration 010 created its table. */
export async function getKeyFingerprint(db: Queryable): Promise<Buffer | undefined> {
  if (!(await tableExists(db, 'encryption_key'))) return undefined;
  const { rows } = await db.query<{ fingerprint: Buffer }>('SELECT fingerprint FROM encryption_key');
  return rows[0]?.fingerprint;
}

/** Records the fingerprint unless one is there; returns the one the database holds afterwards. */
export async function recordKeyFingerprint(db: Queryable, fingerprint: Buffer): Promise<Buffer> {
  await db.query('INSERT INTO encryption_key (fingerprint) VALUES ($1) ON CONFLICT (singleton) DO NOTHING', [fingerprint]);
  const { rows } = await db.query<{ fingerprint: Buffer }>('SELECT fingerprint FROM encryption_key');
  return rows[0]!.fingerprint;
}

/** Any one endpoint's sealed signing secret, with the endpoint id it is bound to; none on a database not yet migrated. */
export async function anySealedSecret(db: Queryable): Promise<{ id: string; secret_encrypted: Buffer } | undefined> {
  if (!(await tableExists(db, 'endpoints'))) return undefined;
  const { rows } = await db.query<{ id: string; secret_encrypted: Buffer }>('SELECT id, secret_encrypted FROM endpoints LIMIT 1');
  return rows[0];
}
