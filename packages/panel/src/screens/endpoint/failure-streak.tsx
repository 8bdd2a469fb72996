import type { Endpoint } from '../../api/types.ts';

/** "3 of 20" consecutive failed deliveries, with a bar that fills towards disabling. */
export function FailureStreak({ endpoint }: { endpoint: Endpoint }) {
  const { failure_streak: n, failure_threshold: max } = endpoint;
  const level = n === 0 ? 'ok' : n >= max ? 'max' : n >= max / 2 ? 'high' : 'some';
  return (
    <span class={`streak streak-${level}`} data-testid="failure-streak" title="Consecutive failed deliveries; at the limit Herald disables the endpoint">
      <span class="streak-text">
        {n} of {max}
      </span>
      <span class="streak-bar" aria-hidden="true">
        <span class={`streak-fill streak-fill-${Math.min(10, Math.ceil((n / Math.max(1, max)) * 10))}`} />
      </span>
    </span>
  );
}
