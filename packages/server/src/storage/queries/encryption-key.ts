import type { Queryable } from '../db.ts';

export async function getKeyFingerprint(db: Queryable): Promise<Buffer | undefined> {
  const { rows } = await db.query<{ fingerprint: Buffer }>('SELECT fingerprint FROM encryption_key');
  return rows[0]?.fingerprint;
}

/** Records the fingerprint unless one is there; returns the one the database holds afterwards. */
export async function recordKeyFingerprint(db: Queryable, fingerprint: Buffer): Promise<Buffer> {
  await db.query('INSERT INTO encryption_key (fingerprint) VALUES ($1) ON CONFLICT (singleton) DO NOTHING', [fingerprint]);
  return (await getKeyFingerprint(db))!;
}

/** Any one endpoint's sealed signing secret, with the endpoint id it is bound to. */
export async function anySealedSecret(db: Queryable): Promise<{ id: string; secret_encrypted: Buffer } | undefined> {
  const { rows } = await db.query<{ id: string; secret_encrypted: Buffer }>('SELECT id, secret_encrypted FROM endpoints LIMIT 1');
  return rows[0];
}
