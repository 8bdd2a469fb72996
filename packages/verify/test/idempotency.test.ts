import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryIdempotencyStore, type IdempotencyStore } from '../src/index.ts';

test('remembered ids are seen; others are not', () => {
  const store = new MemoryIdempotencyStore({ max: 10 });
  assert.equal(store.seen('a'), false);
  store.remember('a');
  assert.equal(store.seen('a'), true);
  assert.equal(store.seen('b'), false);
});

test('beyond max, the least recently used id is evicted first', () => {
  const store = new MemoryIdempotencyStore({ max: 3 });
  for (const id of ['a', 'b', 'c']) store.remember(id);
  store.remember('d'); // evicts a
  assert.equal(store.size, 3);
  assert.equal(store.seen('a'), false);
  assert.deepEqual(['b', 'c', 'd'].map((id) => store.seen(id)), [true, true, true]);
});

test('a hit counts as a use, so a frequently seen id outlives newer ones', () => {
  const store = new MemoryIdempotencyStore({ max: 2 });
  store.remember('a');
  store.remember('b');
  assert.equal(store.seen('a'), true); // now b is the least recently used
  store.remember('c'); // evicts b
  assert.equal(store.seen('b'), false);
  assert.equal(store.seen('a'), true);
  assert.equal(store.seen('c'), true);
});

test('remembering an id twice keeps one entry', () => {
  const store = new MemoryIdempotencyStore({ max: 2 });
  store.remember('a');
  store.remember('a');
  store.remember('b');
  assert.equal(store.size, 2);
  assert.equal(store.seen('a'), true);
});

test('max must be a positive integer', () => {
  for (const max of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, undefined]) {
    assert.throws(() => new MemoryIdempotencyStore({ max: max as number }), RangeError);
  }
});

test('the interface admits async stores, used the same way', async () => {
  const ids = new Set<string>();
  const asyncStore: IdempotencyStore = {
    seen: async (id) => ids.has(id),
    remember: async (id) => void ids.add(id),
  };
  const processed: string[] = [];
  async function handle(store: IdempotencyStore, eventId: string): Promise<void> {
    if (await store.seen(eventId)) return;
    processed.push(eventId);
    await store.remember(eventId);
  }
  for (const store of [asyncStore, new MemoryIdempotencyStore({ max: 100 })]) {
    processed.length = 0;
    for (const id of ['e1', 'e2', 'e1', 'e3', 'e2']) await handle(store, id);
    assert.deepEqual(processed, ['e1', 'e2', 'e3']);
  }
});
