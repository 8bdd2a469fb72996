import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createRecorder, type WriteResults } from '../src/dispatcher/record.ts';
import type { DeliveryResult } from '../src/storage/queries/record-results.ts';

const result = (id: string): DeliveryResult => ({
  deliveryId: id,
  leaseToken: 1,
  endpointId: 'e',
  outcome: 'succeeded',
  retryInMs: null,
  status: 204,
  error: null,
  throttle: null,
  attempt: null,
});

/** A write the test finishes by hand; each call is kept with the ids it was given. */
function heldWrites() {
  const calls: Array<{ ids: string[]; finish: (applied?: string[]) => void; fail: (err: Error) => void }> = [];
  let arrived: (() => void) | undefined;
  const write: WriteResults = (results) =>
    new Promise((resolve, reject) => {
      const ids = results.map((r) => r.deliveryId);
      calls.push({ ids, finish: (applied = ids) => resolve({ applied: new Set(applied), disabled: [] }), fail: reject });
      arrived?.();
    });
  const next = (n: number) => (calls.length >= n ? Promise.resolve() : new Promise<void>((r) => (arrived = () => calls.length >= n && r())));
  return { write, calls, next };
}

describe('the recorder', () => {
  test('group commit: results that come in while a batch is written go together in the next write', async () => {
    const w = heldWrites();
    const recorder = createRecorder({ write: w.write });
    const first = recorder.add(result('a'));
    await w.next(1);
    const rest = ['b', 'c', 'd'].map((id) => recorder.add(result(id)));
    w.calls[0]!.finish();
    assert.equal(await first, 'applied');
    await w.next(2);
    assert.deepEqual(w.calls.map((c) => c.ids), [['a'], ['b', 'c', 'd']]);
    w.calls[1]!.finish();
    assert.deepEqual(await Promise.all(rest), ['applied', 'applied', 'applied']);
  });

  test('a result whose lease no longer held is reported late', async () => {
    const w = heldWrites();
    const recorder = createRecorder({ write: w.write });
    const written = [recorder.add(result('a')), recorder.add(result('b'))];
    await w.next(1);
    w.calls[0]!.finish(['a']);
    assert.deepEqual(await Promise.all(written), ['applied', 'late']);
  });

  test('a write that fails is retried with the same results, and the ones that came meanwhile; none is dropped', async () => {
    const w = heldWrites();
    const errors: unknown[] = [];
    const recorder = createRecorder({ write: w.write, log: { info() {}, warn() {}, error: (o) => errors.push(o) } });
    const first = recorder.add(result('a'));
    await w.next(1);
    const second = recorder.add(result('b'));
    w.calls[0]!.fail(new Error('connection terminated unexpectedly'));
    await w.next(2);
    w.calls[1]!.fail(new Error('connection terminated unexpectedly'));
    await w.next(3);
    assert.deepEqual(w.calls.map((c) => c.ids), [['a'], ['a', 'b'], ['a', 'b']]);
    assert.equal(recorder.waiting, 2);
    w.calls[2]!.finish();
    assert.deepEqual(await Promise.all([first, second]), ['applied', 'applied']);
    assert.equal(errors.length, 2, 'each failure is logged');
  });

  test('close() gives up what is still unwritten, and stops retrying', async () => {
    const w = heldWrites();
    const recorder = createRecorder({ write: w.write, log: { info() {}, warn() {}, error() {} } });
    const written = recorder.add(result('a'));
    await w.next(1);
    w.calls[0]!.fail(new Error('the database is down'));
    await new Promise((r) => setImmediate(r));
    recorder.close();
    assert.equal(await written, 'unwritten');
    assert.equal(await recorder.add(result('b')), 'unwritten');
    assert.equal(w.calls.length, 1);
  });
});
