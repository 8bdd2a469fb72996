import type { ComponentChildren } from 'preact';
import { NETWORK_ERROR, type ApiError } from '../api/client.ts';
import { Button } from './button.tsx';

type Tone = 'error' | 'warning' | 'info' | 'success';

export function Alert({ tone, title, children, testId, live = false }: { tone: Tone; title?: string; children?: ComponentChildren; testId?: string; live?: boolean }) {
  return (
    <div class={`alert alert-${tone}`} role={live ? (tone === 'error' ? 'alert' : 'status') : undefined} data-testid={testId}>
      <span class="alert-icon" aria-hidden="true">
        {tone === 'success' ? '✓' : tone === 'info' ? 'i' : '!'}
      </span>
      <div class="alert-body">
        {title && <p class="alert-title">{title}</p>}
        {children}
      </div>
    </div>
  );
}

/** An API error in words that say what to do, with a retry button when retrying can help. */
export function ErrorAlert({ error, onRetry, title }: { error: ApiError; onRetry?: () => void; title?: string }) {
  const canRetry = onRetry && (error.code === NETWORK_ERROR || error.status >= 500 || error.status === 429);
  return (
    <Alert tone="error" title={title ?? error.problem.title} testId="error-alert" live>
      <p>{error.problem.detail}</p>
      {canRetry && (
        <p>
          <Button small onClick={onRetry}>
            Try again
          </Button>
        </p>
      )}
    </Alert>
  );
}
