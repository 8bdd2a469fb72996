import type { ComponentChildren } from 'preact';
import type { AttemptOutcome, Endpoint } from '../api/types.ts';

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

/** "200", "503 · Will retry", "No response · Failed": the code first, as people scan for it. */
export function OutcomeBadge({ outcome, statusCode }: { outcome: AttemptOutcome; statusCode: number | null }) {
  const { tone, label } = OUTCOME[outcome];
  return (
    <Badge tone={tone} testId="outcome-badge">
      {statusCode === null ? 'No response' : statusCode}
      {outcome !== 'succeeded' && <span class="badge-sub"> · {label}</span>}
      {outcome === 'succeeded' && <span class="visually-hidden"> · {label}</span>}
    </Badge>
  );
}
