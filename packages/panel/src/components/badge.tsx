import type { ComponentChildren } from 'preact';
import type { AttemptOutcome, DeliveryState, Endpoint } from '../api/types.ts';

export type Tone = 'neutral' | 'success' | 'warning' | 'danger' | 'info';

export function Badge({ tone = 'neutral', children, testId }: { tone?: Tone; children: ComponentChildren; testId?: string }) {
  return (
    <span class={`badge badge-${tone}`} data-testid={testId}>
      {children}
    </span>
  );
}

export function StateBadge({ endpoint }: { endpoint: Endpoint }) {
  return endpoint.state === 'enabled' ? (
    <Badge tone="success" testId="state-badge">
      Enabled
    </Badge>
  ) : (
    <Badge tone="danger" testId="state-badge">
      <span aria-hidden="true">⚠ </span>Disabled
    </Badge>
  );
}

const OUTCOME: Record<AttemptOutcome, { tone: Tone; label: string }> = {
  succeeded: { tone: 'success', label: 'Succeeded' },
  retrying: { tone: 'warning', label: 'Will retry' },
  failed: { tone: 'danger', label: 'Failed' },
};

/**
 * What happened after an attempt, from its outcome and its delivery's state
 * now: a retrying attempt whose delivery was since skipped (the endpoint was
 * disabled) will not be retried, and one whose delivery settled was retried.
 */
export function outcomeLabel(outcome: AttemptOutcome, deliveryState?: DeliveryState | null): { tone: Tone; label: string; hint?: string } {
  if (outcome === 'retrying') {
    switch (deliveryState) {
      case 'skipped':
        return { tone: 'neutral', label: 'Skipped', hint: 'Not retried: the endpoint was disabled. Recover deliveries to send it again.' };
      case 'succeeded':
        return { tone: 'warning', label: 'Retried, delivered', hint: 'A later attempt of this delivery succeeded.' };
      case 'failed':
        return { tone: 'danger', label: 'Retried, failed', hint: 'Every attempt of this delivery failed.' };
      case null:
        return { tone: 'neutral', label: 'Retried', hint: 'Its delivery is no longer kept.' };
      default:
        return OUTCOME.retrying;
    }
  }
  if (outcome === 'failed' && deliveryState === 'pending') return { tone: 'danger', label: 'Failed, sent again', hint: 'The delivery was recovered or redelivered and is being sent again.' };
  return OUTCOME[outcome];
}

/** "200", "503 · Will retry", "No response · Failed": the code first, as people scan for it. */
export function OutcomeBadge({ outcome, statusCode, deliveryState }: { outcome: AttemptOutcome; statusCode: number | null; deliveryState?: DeliveryState | null }) {
  const { tone, label, hint } = outcomeLabel(outcome, deliveryState);
  return (
    <span title={hint}>
      <Badge tone={tone} testId="outcome-badge">
        {statusCode === null ? 'No response' : statusCode}
        {outcome !== 'succeeded' && <span class="badge-sub"> · {label}</span>}
        {outcome === 'succeeded' && <span class="visually-hidden"> · {label}</span>}
      </Badge>
      {hint && <span class="visually-hidden"> ({hint})</span>}
    </span>
  );
}
