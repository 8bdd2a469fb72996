import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { UuidV7Maker, uuidV7 } from '../src/core/ids.ts';

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const msOf = (uuid: string) => parseInt(uuid.replaceAll('-', '').slice(0, 12), 16);

describe('time-ordered ids (UUID version 7, RFC 9562)', () => {
  test('version 7, the RFC variant, and the time in milliseconds in the first 48 bits', () => {
    for (const ms of [0, 1, Date.parse('2026-11-20T08:00:00.123Z'), 2 ** 48 - 1]) {
      const id = uuidV7(ms);
      assert.match(id, UUID_V7);
      assert.equal(msOf(id), ms);
    }
    assert.equal(uuidV7(0).slice(0, 13), '00000000-0000');
    assert.equal(uuidV7(2 ** 48 - 1).slice(0, 13), 'ffffffff-ffff');
  });

  test('a time that does not fit 48 bits of whole milliseconds is refused, not wrapped', () => {
    for (const ms of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 48]) {
      assert.throws(() => uuidV7(ms), RangeError, String(ms));
    }
  });

  test("a maker's first id checks its time too, and so does each new millisecond after it (the last one is remembered between calls)", () => {
    for (const ms of [-1, Number.NaN, 1.5]) assert.throws(() => new UuidV7Maker().next(ms), RangeError, `first call with ${ms}`);
    const ids = new UuidV7Maker();
    const ms = Date.parse('2026-11-20T08:00:00.123Z');
    const a = ids.next(ms);
    const b = ids.next(ms);
    assert.equal(a.slice(0, 15), b.slice(0, 15));
    assert.notEqual(a, b);
    assert.equal(msOf(ids.next(ms + 1)), ms + 1);
    assert.throws(() => ids.next(2 ** 48), RangeError);
    assert.equal(msOf(ids.next(ms)), ms, 'a refused time leaves the maker as it was');
  });

  test('by default the current time; a later millisecond sorts after an earlier one', () => {
    const before = Date.now();
    const id = uuidV7();
    const after = Date.now();
    assert.ok(msOf(id) >= before && msOf(id) <= after);
    assert.ok(uuidV7(before + 1) > uuidV7(before));
  });

  test('74 random bits: no two alike in 100,000 made in the same millisecond', () => {
    const ms = Date.now();
    const maker = new UuidV7Maker();
    const ids = new Set(Array.from({ length: 100_000 }, () => maker.next(ms)));
    assert.equal(ids.size, 100_000);
    // The random part varies in every position it owns.
    const sample = [...ids].slice(0, 200);
    for (const at of [15, 16, 17, 20, 21, 22, 24, 30, 35]) assert.ok(new Set(sample.map((s) => s[at])).size > 4, `position ${at}`);
  });
});
