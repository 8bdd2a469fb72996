import type { Attempt } from '../../api/types.ts';

export interface Health {
  total: number;
  succeeded: number;
  /** 0..1 */
  successRate: number;
  medianMs: number;
  p95Ms: number;
  maxMs: number;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1));
  return sorted[i]!;
}

/** Success rate and latency over the given attempts (tests included: they are real requests). */
export function healthOf(attempts: Attempt[]): Health {
  const durations = attempts.map((a) => a.duration_ms).sort((x, y) => x - y);
  const succeeded = attempts.filter((a) => a.outcome === 'succeeded').length;
  return {
    total: attempts.length,
    succeeded,
    successRate: attempts.length ? succeeded / attempts.length : 0,
    medianMs: percentile(durations, 0.5),
    p95Ms: percentile(durations, 0.95),
    maxMs: durations.at(-1) ?? 0,
  };
}
