import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_RETRY } from '../src/config.ts';
import { classifyOutcome } from '../src/core/outcome.ts';
import { nextAttemptAt, parseRetryAfter } from '../src/core/retry-policy.ts';

const now = new Date('2026-11-20T08:00:00.000Z');
const delay = (attempt: number, random = 0.5, retryAfterMs?: number) => {
  const at = nextAttemptAt({ attempt, now, random: () => random, schedule: DEFAULT_RETRY, retryAfterMs });
  return at === null ? null : at.getTime() - now.getTime();
};

describe('retry schedule (the defaults)', () => {
  test('nominal delays: 1 min, 5 min, 25 min, ~2 h, ~10 h, ~2 days; none after the 6th retry', () => {
    assert.deepEqual([1, 2, 3, 4, 5, 6, 7].map((a) => delay(a)), [60_000, 300_000, 1_500_000, 7_500_000, 37_500_000, 187_500_000, null]);
  });

  test('jitter stays within ±20 % of the nominal delay', () => {
    assert.equal(delay(1, 0), 48_000);
    assert.equal(delay(1, 0.999999), 72_000);
  });

  test('Retry-After lengthens the wait, never shortens it below the schedule, and never past the cap', () => {
    assert.equal(delay(1, 0.5, 120_000), 120_000);
    assert.equal(delay(1, 0.5, 1_000), 60_000);
    assert.equal(delay(1, 0.5, 30 * 86_400_000), DEFAULT_RETRY.capMs);
  });

  test('a schedule configured in milliseconds for tests', () => {
    const at = nextAttemptAt({ attempt: 2, now, random: () => 0.5, schedule: { ...DEFAULT_RETRY, baseMs: 1, factor: 2 } });
    assert.equal(at!.getTime() - now.getTime(), 2);
  });

  test('Retry-After as seconds or an HTTP date; garbage is ignored', () => {
    assert.equal(parseRetryAfter('120', now), 120_000);
    assert.equal(parseRetryAfter('Fri, 20 Nov 2026 08:01:00 GMT', now), 60_000);
    assert.equal(parseRetryAfter('soon', now), undefined);
    assert.equal(parseRetryAfter(undefined, now), undefined);
  });
});

describe('outcome classification (the published table)', () => {
  const verdict = (status: number) => classifyOutcome({ stage: 'response', status }).verdict;
  test('2xx success, 429 and 5xx retry, other 4xx permanent, 3xx permanent', () => {
    assert.deepEqual([200, 204, 299].map(verdict), ['success', 'success', 'success']);
    assert.deepEqual([429, 500, 502, 503, 599].map(verdict), ['retry', 'retry', 'retry', 'retry', 'retry']);
    assert.deepEqual([400, 401, 403, 404, 409, 410, 413, 422].map(verdict), Array(8).fill('permanent'));
    assert.deepEqual([301, 302, 307, 308].map(verdict), Array(4).fill('permanent'));
  });
  test('every transport failure but a refused address is retried with its message', () => {
    const o = classifyOutcome({ stage: 'transport', kind: 'timeout', message: 'timed out after 10 s' });
    assert.deepEqual(o, { verdict: 'retry', error: 'timed out after 10 s', status: null });
    for (const kind of ['connection_refused', 'connection_reset', 'dns', 'tls', 'network', 'aborted'] as const) {
      assert.equal(classifyOutcome({ stage: 'transport', kind, message: kind }).verdict, 'retry', kind);
    }
  });
  test('an address the policy refuses is a permanent failure: nothing was sent, and asking again gets the same answer', () => {
    const message = '10.0.0.5 is a private address; Herald delivers only to public addresses unless its operator allows that network (HERALD_ALLOWED_NETWORKS)';
    assert.deepEqual(classifyOutcome({ stage: 'transport', kind: 'address_refused', message }), { verdict: 'permanent', error: message, status: null });
  });
});
