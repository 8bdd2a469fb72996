import { test } from 'node:test';
import assert from 'node:assert/strict';
import { coalescingNotifier, NOTIFY_WINDOW_MS } from '../src/services/new-work.ts';

/** Lets the notifier's awaited send settle (it resolves at once here). */
const settle = () => new Promise((r) => setImmediate(r));

test('the first poke notifies at once; pokes within the window share one follow-up at its end; a quiet window sends nothing', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  let sent = 0;
  const poke = coalescingNotifier(async () => void (sent += 1), NOTIFY_WINDOW_MS);

  poke();
  await settle();
  assert.equal(sent, 1, 'at once, so an idle dispatcher wakes within milliseconds');

  for (let i = 0; i < 5; i++) poke();
  t.mock.timers.tick(NOTIFY_WINDOW_MS - 1);
  await settle();
  assert.equal(sent, 1, 'five pokes inside the window: held');
  t.mock.timers.tick(1);
  await settle();
  assert.equal(sent, 2, 'one follow-up for all five');

  // The follow-up opened a window of its own, and nothing came in it.
  t.mock.timers.tick(NOTIFY_WINDOW_MS);
  await settle();
  assert.equal(sent, 2, 'nothing to follow up');

  poke();
  await settle();
  assert.equal(sent, 3, 'after a quiet window, at once again');
});

test('a poke while a send is still under way is not lost, and a failed send is reported and does not stop later ones', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const errors: unknown[] = [];
  let calls = 0;
  let finish: (() => void) | undefined;
  const poke = coalescingNotifier(
    () => {
      calls += 1;
      if (calls === 1) return Promise.reject(new Error('connection lost'));
      return new Promise<void>((r) => (finish = r));
    },
    NOTIFY_WINDOW_MS,
    (err) => errors.push(err),
  );

  poke();
  await settle();
  assert.equal(calls, 1);
  assert.equal((errors[0] as Error).message, 'connection lost');
  poke();
  t.mock.timers.tick(NOTIFY_WINDOW_MS);
  await settle();
  assert.equal(calls, 2, 'the poke made during the failed one is sent after its window');

  poke(); // while the second send hangs
  t.mock.timers.tick(NOTIFY_WINDOW_MS * 3);
  await settle();
  assert.equal(calls, 2, 'held while the send is under way');
  finish!();
  await settle();
  t.mock.timers.tick(NOTIFY_WINDOW_MS);
  await settle();
  assert.equal(calls, 3, 'and sent once it is over and its window has passed');
});

test('an error handler that throws does not leave the notifier stuck', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  let calls = 0;
  const poke = coalescingNotifier(
    async () => {
      calls += 1;
      if (calls === 1) throw new Error('connection lost');
    },
    NOTIFY_WINDOW_MS,
    () => {
      throw new Error('the logger is broken too');
    },
  );
  poke();
  await settle();
  poke();
  t.mock.timers.tick(NOTIFY_WINDOW_MS);
  await settle();
  assert.equal(calls, 2);
});
