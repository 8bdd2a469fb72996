import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDb, ENGINES, type TestDb } from './helpers/engines.ts';
import type { Queryable } from '../src/storage/db.ts';

/**
 * The hot statements run as named (prepared) statements on both engines. On
 * the embedded engine that is Herald's own path through PGlite's wire
 * protocol, so it must give what PGlite's own `query` gives, and keep its
 * guarantees: errors with their SQLSTATE, transactions, one statement at a time.
 */
for (const engine of ENGINES) {
  describe(`named statements read and write as unnamed ones do [${engine}]`, () => {
    let db: TestDb;
    before(async () => {
      db = await createTestDb(engine);
      await db.exec('CREATE TABLE named_probe (id uuid PRIMARY KEY, n int8, at timestamptz, raw bytea, tags text, doc jsonb, ok boolean)');
    });
    after(() => db.close());

    const INSERT = `INSERT INTO named_probe (id, n, at, raw, tags, doc, ok)
      SELECT * FROM unnest($1::uuid[], $2::int8[], $3::timestamptz[], $4::bytea[], $5::text[], $6::jsonb[], $7::boolean[])
      RETURNING id, n, at, raw, doc, ok`;
    const SELECT = 'SELECT id, n, at, raw, tags, doc, ok FROM named_probe WHERE id = ANY ($1::uuid[]) ORDER BY id';

    test('the same rows, with every type Herald reads, NULLs included, on first use and after', async () => {
      const ids = ['019ab2c4-0d2e-7a1b-8c3d-4e5f60718293', '019ab2c4-0d2e-7a1b-8c3d-4e5f60718294'];
      const inserted = await db.query(
        INSERT,
        [ids, [9_007_199_254_740_991, null], [new Date('2026-11-24T19:00:00.123Z'), null], [Buffer.from([0, 1, 255]), null], ['a,"b"', null], [{ k: 'é' }, null], [true, null]],
        { name: 'named_probe_insert' },
      );
      assert.equal(inserted.rowCount, 2);
      const named = await db.query(SELECT, [ids], { name: 'named_probe_select' });
      const again = await db.query(SELECT, [ids], { name: 'named_probe_select' });
      const unnamed = await db.query(SELECT, [ids]);
      assert.deepEqual(named.rows, unnamed.rows);
      assert.deepEqual(again.rows, unnamed.rows);
      const first = named.rows[0]!;
      assert.equal(first.n, 9_007_199_254_740_991);
      assert.equal((first.at as Date).toISOString(), '2026-11-24T19:00:00.123Z');
      assert.ok(Buffer.isBuffer(first.raw));
      assert.deepEqual([...(first.raw as Buffer)], [0, 1, 255]);
      assert.deepEqual(first.doc, { k: 'é' });
      assert.deepEqual(named.rows[1], { id: ids[1], n: null, at: null, raw: null, tags: null, doc: null, ok: null });
      // A name with no parameters and no rows.
      assert.deepEqual((await db.query('SELECT 1 AS one WHERE false', [], { name: 'named_probe_empty' })).rows, []);
    });

    test('an error keeps its SQLSTATE, and the same name works again afterwards', async () => {
      const id = '019ab2c4-0d2e-7a1b-8c3d-4e5f60718295';
      const row = [[id], [1], [null], [null], [null], [null], [null]];
      await db.query(INSERT, row, { name: 'named_probe_insert' });
      await assert.rejects(db.query(INSERT, row, { name: 'named_probe_insert' }), { code: '23505' });
      await assert.rejects(db.query('SELECT * FROM no_such_table', [], { name: 'named_probe_bad' }), { code: '42P01' });
      const other = '019ab2c4-0d2e-7a1b-8c3d-4e5f60718296';
      assert.equal((await db.query(INSERT, [[other], [2], [null], [null], [null], [null], [null]], { name: 'named_probe_insert' })).rowCount, 1);
    });

    test('inside a transaction: they see its writes, and roll back with it', async () => {
      const id = '019ab2c4-0d2e-7a1b-8c3d-4e5f60718297';
      await assert.rejects(
        db.transaction(async (tx) => {
          await tx.query(INSERT, [[id], [3], [null], [null], [null], [null], [null]], { name: 'named_probe_insert' });
          assert.equal((await tx.query(SELECT, [[id]], { name: 'named_probe_select' })).rows.length, 1);
          // A failing named statement aborts the transaction, as any statement does.
          await tx.query(INSERT, [[id], [3], [null], [null], [null], [null], [null]], { name: 'named_probe_insert' });
        }),
        { code: '23505' },
      );
      assert.equal((await db.query(SELECT, [[id]], { name: 'named_probe_select' })).rows.length, 0);
    });

    test('a name carries one text: another text under the same name is refused, not run as the first', async () => {
      await db.query('SELECT 1 AS n', [], { name: 'named_probe_text' });
      await assert.rejects(db.query('SELECT 2 AS n', [], { name: 'named_probe_text' }));
      assert.deepEqual((await db.query('SELECT 1 AS n', [], { name: 'named_probe_text' })).rows, [{ n: 1 }]);
    });

    test('in a transaction that has ended, a named statement is refused as an unnamed one is', { skip: engine !== 'pglite' && 'the PostgreSQL adapter hands the connection back to its pool' }, async () => {
      let late!: Queryable;
      await db.transaction(async (tx) => {
        late = tx;
      });
      await assert.rejects(late.query('SELECT 1 AS one'), /Transaction is closed/);
      await assert.rejects(late.query('SELECT 1 AS one', [], { name: 'named_probe_one' }), /Transaction is closed/);
    });

    test('after the database is closed, a named statement fails as an unnamed one does', async () => {
      const closing = await createTestDb(engine);
      await closing.query('SELECT 1 AS one', [], { name: 'named_probe_one' });
      await closing.close();
      const unnamed = await closing.query('SELECT 1 AS one').then(
        () => 'no error',
        (err: Error) => err.message,
      );
      await assert.rejects(closing.query('SELECT 1 AS one', [], { name: 'named_probe_one' }), (err: Error) => err.message === unnamed);
    });

    test("one outside a transaction never runs inside another caller's open transaction", async () => {
      const id = '019ab2c4-0d2e-7a1b-8c3d-4e5f60718298';
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      let written!: () => void;
      const insertedInTx = new Promise<void>((r) => (written = r));
      const tx = db.transaction(async (q) => {
        await q.query(INSERT, [[id], [4], [null], [null], [null], [null], [null]], { name: 'named_probe_insert' });
        written();
        await gate;
        throw new Error('rolled back on purpose');
      });
      await insertedInTx;
      // Started while the transaction is open and holds an uncommitted row:
      // PostgreSQL answers from another connection, PGlite after the
      // transaction ends. Neither may see the row that is rolled back.
      const outside = db.query<{ n: number }>('SELECT count(*)::int AS n FROM named_probe WHERE id = $1', [id], { name: 'named_probe_count' });
      await new Promise((r) => setImmediate(r));
      release();
      await assert.rejects(tx, /rolled back on purpose/);
      assert.equal((await outside).rows[0]!.n, 0);
    });
  });
}
