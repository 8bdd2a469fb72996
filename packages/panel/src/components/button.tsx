import type { ComponentChildren, JSX } from 'preact';

type Variant = 'primary' | 'secondary' | 'danger' | 'ghost';
type Props = Omit<JSX.HTMLAttributes<HTMLButtonElement>, 'size'> & {
  variant?: Variant;
  busy?: boolean;
  small?: boolean;
  type?: 'button' | 'submit';
  disabled?: boolean;
  children: ComponentChildren;
};

/** A real <button>; while `busy` it keeps its label, shows a spinner and ignores clicks. */
export function Button({ variant = 'secondary', busy = false, small = false, type = 'button', disabled, children, class: cls, ...rest }: Props) {
  return (
    <button
      {...rest}
      type={type}
      class={['btn', `btn-${variant}`, small ? 'btn-small' : '', busy ? 'is-busy' : '', cls ?? ''].filter(Boolean).join(' ')}
      disabled={disabled || busy}
      aria-busy={busy || undefined}
    >
      {busy && <span class="spinner" aria-hidden="true" />}
      {children}
    </button>
  );
}
