import type { Clock } from '../../src/core/clock.ts';

/** A clock the test moves by hand. */
export interface TestClock {
  now: Clock;
  advance(ms: number): void;
  set(date: Date): void;
}

export function createTestClock(start = new Date('2026-11-20T08:00:00.000Z')): TestClock {
  let t = start.getTime();
  return {
    now: () => new Date(t),
    advance(ms) {
      t += ms;
    },
    set(date) {
      t = date.getTime();
    },
  };
}
