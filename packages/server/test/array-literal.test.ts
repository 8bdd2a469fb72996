import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDb, ENGINES, type TestDb } from './helpers/engines.ts';
import { plainArray, textArray, timeArray } from '../src/storage/queries/array-literal.ts';

for (const engine of ENGINES) {
  describe(`array literals written by hand read back as the values they were made of [${engine}]`, () => {
    let db: TestDb;
    before(async () => (db = await createTestDb(engine)));
    after(() => db.close());

    const back = async <T>(literal: string, type: string) => (await db.query<{ a: T[] }>(`SELECT $1::${type}[] AS a`, [literal])).rows[0]!.a;

    test('text: quotes, backslashes, separators, braces, "NULL" as a word, the empty string, new lines and non-ASCII', async () => {
      const values = ['HTTP 503', 'say "hi"', 'C:\\path\\', 'a,b', '{x}', 'NULL', '', 'two\nlines', 'TLS: certificate has expired', 'Température ✓', ' padded ', null];
      assert.deepEqual(await back<string | null>(textArray(values), 'text'), values);
    });

    test('uuids, integers with nulls, and times to the millisecond', async () => {
      const ids = ['019ab2c4-0d2e-7a1b-8c3d-4e5f60718293', '00000000-0000-7000-8000-000000000000'];
      assert.deepEqual(await back<string>(plainArray(ids), 'uuid'), ids);
      assert.deepEqual(await back<number | null>(plainArray([200, null, -1, 2_147_483_647]), 'int'), [200, null, -1, 2_147_483_647]);
      assert.deepEqual((await back<string>(plainArray([9_007_199_254_740_991]), 'int8')).map(String), ['9007199254740991']);
      const times = [new Date('2026-11-24T19:00:00.123Z'), new Date(0), new Date('2030-01-01T00:00:00.999Z')];
      assert.deepEqual((await back<Date>(timeArray(times), 'timestamptz')).map((d) => d.getTime()), times.map((d) => d.getTime()));
    });

    test('undefined is NULL, as the driver wrote it', async () => {
      assert.deepEqual(await back<string | null>(textArray(['a', undefined]), 'text'), ['a', null]);
      assert.deepEqual(await back<number | null>(plainArray([1, undefined]), 'int'), [1, null]);
    });

    test('empty arrays', async () => {
      assert.deepEqual(await back<string>(textArray([]), 'text'), []);
      assert.deepEqual(await back<string>(plainArray([]), 'uuid'), []);
      assert.deepEqual(await back<Date>(timeArray([]), 'timestamptz'), []);
    });
  });
}
