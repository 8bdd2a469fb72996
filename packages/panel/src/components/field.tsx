import type { ComponentChildren } from 'preact';

/**
 * A label, the control, a hint and an error, wired with for/id and
 * aria-describedby. The control itself is the child; give it `id` and
 * `aria-describedby={describedBy(id, hint, error)}`.
 */
export function Field({ id, label, hint, error, children, optional = false }: { id: string; label: string; hint?: ComponentChildren; error?: string; children: ComponentChildren; optional?: boolean }) {
  return (
    <div class={`field${error ? ' has-error' : ''}`}>
      <label for={id} class="label">
        {label}
        {optional && <span class="optional"> (optional)</span>}
      </label>
      {children}
      {hint && (
        <p id={`${id}-hint`} class="hint">
          {hint}
        </p>
      )}
      {error && (
        <p id={`${id}-error`} class="field-error" data-testid={`${id}-error`}>
          {error}
        </p>
      )}
    </div>
  );
}

export function describedBy(id: string, hint: unknown, error: unknown): string | undefined {
  const ids = [hint ? `${id}-hint` : '', error ? `${id}-error` : ''].filter(Boolean);
  return ids.length ? ids.join(' ') : undefined;
}
