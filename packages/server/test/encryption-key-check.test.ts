import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encryptSecret, generateSigningSecret, keyFingerprint } from '../src/core/secrets.ts';
import { ConfigError } from '../src/errors.ts';
import { createAccount } from '../src/services/accounts.ts';
import type { Db, Engine } from '../src/storage/db.ts';
import { openStorage, type Storage } from '../src/storage/open.ts';
import { openPglite } from '../src/storage/pglite.ts';
import { openPostgres } from '../src/storage/postgres.ts';
import { insertEndpoint } from '../src/storage/queries/endpoints.ts';
import { cleanEnv, runCli } from './helpers/cli.ts';
import { createScratchPostgres, ENGINES } from './helpers/engines.ts';

const dirs: string[] = [];
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A place to keep one database: a data directory (embedded) or a scratch PostgreSQL database. */
async function newPlace(engine: Engine): Promise<{ dataDir: string; databaseUrl: string | undefined; drop(): Promise<void> }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'herald-key-'));
  dirs.push(dataDir);
  if (engine === 'pglite') return { dataDir, databaseUrl: undefined, drop: async () => {} };
  const pg = await createScratchPostgres();
  return { dataDir, databaseUrl: pg.url, drop: pg.drop };
}

async function addEndpoint(storage: Storage): Promise<void> {
  const account = await createAccount(storage.db, 'Acme Logistics');
  const id = randomUUID();
  await insertEndpoint(storage.db, {
    id,
    accountId: account.id,
    url: 'https://hooks.example.com/herald',
    description: '',
    eventTypes: [],
    secretEncrypted: encryptSecret(storage.encryptionKey, generateSigningSecret(), id),
    secretHint: 'whsec_abcd…',
  });
}

/** The place's database opened directly, as no Herald start would: to look at it without migrating. */
async function peek<T>(engine: Engine, place: { dataDir: string; databaseUrl: string | undefined }, fn: (db: Db) => Promise<T>): Promise<T> {
  const db = engine === 'pglite' ? await openPglite({ dataDir: join(place.dataDir, 'pgdata') }) : await openPostgres({ connectionString: place.databaseUrl! });
  try {
    return await fn(db);
  } finally {
    await db.close();
  }
}

/** Refused with a ConfigError naming `setting`, and no key in the message. */
function refusal(setting: RegExp, ...keys: Buffer[]) {
  return (err: unknown) => {
    assert.ok(err instanceof ConfigError, String(err));
    assert.match(err.setting, setting);
    assert.match(err.message, /from a backup|first started with/);
    for (const key of keys) {
      assert.ok(!err.message.includes(key.toString('base64')), 'the message holds no key');
      assert.ok(!err.message.includes(key.toString('hex')), 'the message holds no key');
    }
    return true;
  };
}

for (const engine of ENGINES) {
  describe(`the operator key is checked at start [${engine}]`, () => {
    const right = randomBytes(32);
    const wrong = randomBytes(32);
    // On PostgreSQL the key is always HERALD_ENCRYPTION_KEY; on the embedded engine, the file.
    const setting = engine === 'postgres' ? /^HERALD_ENCRYPTION_KEY$/ : /encryption\.key$/;

    async function open(place: { dataDir: string; databaseUrl: string | undefined }, key: Buffer | undefined): Promise<Storage> {
      if (engine === 'pglite' && key) writeFileSync(join(place.dataDir, 'encryption.key'), `${key.toString('base64')}\n`, { mode: 0o600 });
      return openStorage({ dataDir: place.dataDir, databaseUrl: place.databaseUrl, encryptionKey: engine === 'postgres' ? key : undefined });
    }

    test('a new database records the fingerprint of its key (never the key); the same key opens it again', async () => {
      const place = await newPlace(engine);
      try {
        const first = await open(place, right);
        assert.deepEqual(first.encryptionKey, right);
        const { rows } = await first.db.query<{ fingerprint: Buffer }>('SELECT fingerprint FROM encryption_key');
        assert.equal(rows.length, 1);
        assert.deepEqual(rows[0]!.fingerprint, keyFingerprint(right));
        assert.ok(!rows[0]!.fingerprint.includes(right.subarray(0, 8)));
        await addEndpoint(first);
        await first.close();
        const again = await open(place, right);
        assert.deepEqual(again.encryptionKey, right);
        await again.close();
      } finally {
        await place.drop();
      }
    });

    test('a wrong key is refused at start, with what to restore', async () => {
      const place = await newPlace(engine);
      try {
        const first = await open(place, right);
        await first.close();
        // Refused even with no secret stored yet: the fingerprint is enough.
        await assert.rejects(open(place, wrong), refusal(setting, right, wrong));
      } finally {
        await place.drop();
      }
    });

    test('a database from before fingerprints adopts its key only if the key opens a stored secret', async () => {
      const place = await newPlace(engine);
      try {
        const first = await open(place, right);
        await addEndpoint(first);
        await first.db.query('DELETE FROM encryption_key');
        await first.close();
        await assert.rejects(open(place, wrong), refusal(setting, right, wrong));
        const adopted = await open(place, right);
        const { rows } = await adopted.db.query<{ fingerprint: Buffer }>('SELECT fingerprint FROM encryption_key');
        assert.deepEqual(rows[0]?.fingerprint, keyFingerprint(right));
        await adopted.close();
      } finally {
        await place.drop();
      }
    });

    test('a wrong key is refused before any migration runs, so the database stays as the older Herald left it', async () => {
      const place = await newPlace(engine);
      try {
        const first = await open(place, right);
        await addEndpoint(first);
        // As a Herald from before migration 010 left it: no fingerprint table.
        await first.db.query('DROP TABLE encryption_key');
        await first.db.query('DELETE FROM herald_migrations WHERE version = 10');
        await first.close();

        const schema = () =>
          peek(engine, place, async (db) => {
            const { rows } = await db.query<{ versions: string; table: string | null }>(
              "SELECT string_agg(version::text, ',' ORDER BY version) AS versions, to_regclass('encryption_key')::text AS table FROM herald_migrations",
            );
            return rows[0];
          });
        const before = await schema();
        assert.equal(before?.table, null);
        assert.ok(!before?.versions.split(',').includes('10'));

        await assert.rejects(open(place, wrong), refusal(setting, right, wrong));
        assert.deepEqual(await schema(), before, 'no migration was applied');

        const adopted = await open(place, right);
        assert.deepEqual(adopted.applied, [10]);
        const { rows } = await adopted.db.query<{ fingerprint: Buffer }>('SELECT fingerprint FROM encryption_key');
        assert.deepEqual(rows[0]?.fingerprint, keyFingerprint(right));
        await adopted.close();
      } finally {
        await place.drop();
      }
    });

    if (engine === 'pglite') {
      test('a missing key file is never regenerated over a database that has one', async () => {
        const place = await newPlace(engine);
        const keyFile = join(place.dataDir, 'encryption.key');
        const first = await open(place, undefined);
        assert.ok(existsSync(keyFile), 'a new data directory gets a key');
        const generated = Buffer.from(readFileSync(keyFile, 'utf8').trim(), 'base64');
        await addEndpoint(first);
        await first.close();

        unlinkSync(keyFile);
        await assert.rejects(open(place, undefined), refusal(/encryption\.key$/, generated));
        assert.ok(!existsSync(keyFile), 'no new key was written');

        // Also before fingerprints: the stored secret alone stops it.
        const again = await open(place, generated);
        await again.db.query('DELETE FROM encryption_key');
        await again.close();
        unlinkSync(keyFile);
        await assert.rejects(open(place, undefined), refusal(/encryption\.key$/, generated));
        assert.ok(!existsSync(keyFile), 'no new key was written');
      });

      test('the CLI exits non-zero with the message and without the key', async () => {
        const place = await newPlace(engine);
        const first = await open(place, right);
        await first.close();
        writeFileSync(join(place.dataDir, 'encryption.key'), `${wrong.toString('base64')}\n`);
        const res = await runCli(['migrate', '--data-dir', place.dataDir], cleanEnv());
        assert.equal(res.code, 2, 'a setting to fix: the usage exit code');
        assert.match(res.stderr, /^herald: .*encryption\.key: is not the key this database's signing secrets are encrypted under\. Restore encryption\.key from a backup/m);
        assert.ok(!res.stderr.includes('unexpected error'), res.stderr);
        assert.ok(!res.stderr.includes(wrong.toString('base64')) && !res.stderr.includes(right.toString('base64')));
      });
    } else {
      test('the CLI exits non-zero with the message and without the key', async () => {
        const place = await newPlace(engine);
        try {
          const first = await open(place, right);
          await first.close();
          const res = await runCli(['migrate'], cleanEnv({ DATABASE_URL: place.databaseUrl!, HERALD_ENCRYPTION_KEY: wrong.toString('base64') }));
          assert.equal(res.code, 2, 'a setting to fix: the usage exit code');
          assert.match(res.stderr, /^herald: HERALD_ENCRYPTION_KEY: is not the key this database's signing secrets are encrypted under\. Set HERALD_ENCRYPTION_KEY to the key/m);
          assert.ok(!res.stderr.includes('unexpected error'), res.stderr);
          assert.ok(!res.stderr.includes(wrong.toString('base64')) && !res.stderr.includes(right.toString('base64')));
        } finally {
          await place.drop();
        }
      });
    }
  });
}
