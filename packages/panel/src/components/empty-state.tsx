import type { ComponentChildren } from 'preact';

export function EmptyState({ title, children, action, testId }: { title: string; children?: ComponentChildren; action?: ComponentChildren; testId?: string }) {
  return (
    <div class="empty" data-testid={testId}>
      <p class="empty-title">{title}</p>
      {children && <div class="empty-text">{children}</div>}
      {action && <div class="empty-action">{action}</div>}
    </div>
  );
}
