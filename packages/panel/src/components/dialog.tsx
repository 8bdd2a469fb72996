import type { ComponentChildren } from 'preact';
import { useEffect, useId, useRef } from 'preact/hooks';

interface Props {
  open: boolean;
  title: string;
  onClose(): void;
  children: ComponentChildren;
  /** Buttons at the bottom, primary last. */
  footer?: ComponentChildren;
  testId?: string;
  wide?: boolean;
}

/**
 * A modal on the native <dialog>: showModal() makes the rest of the page inert
 * and keeps Tab inside, Esc closes it, and focus returns to whatever opened it.
 * Put `autofocus` on the safest control (usually Cancel).
 */
export function Dialog({ open, title, onClose, children, footer, testId, wide = false }: Props) {
  const ref = useRef<HTMLDialogElement>(null);
  const opener = useRef<Element | null>(null);
  const titleId = useId();
  const onCloseRef = useRef(onClose);
  onCloseRef.current = onClose;

  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (open && !dialog.open) {
      opener.current = document.activeElement;
      dialog.showModal();
    } else if (!open && dialog.open) {
      dialog.close();
    }
  }, [open]);

  useEffect(() => {
    const dialog = ref.current!;
    // Esc: let the parent decide (it owns `open`); the browser would close it behind its back.
    const cancel = (e: Event) => {
      e.preventDefault();
      onCloseRef.current();
    };
    const closed = () => {
      const back = opener.current;
      if (back instanceof HTMLElement && back.isConnected) back.focus();
    };
    dialog.addEventListener('cancel', cancel);
    dialog.addEventListener('close', closed);
    return () => {
      dialog.removeEventListener('cancel', cancel);
      dialog.removeEventListener('close', closed);
      if (dialog.open) dialog.close();
    };
  }, []);

  return (
    <dialog ref={ref} class={`dialog${wide ? ' dialog-wide' : ''}`} aria-labelledby={titleId} data-testid={testId}>
      {open && (
        <div class="dialog-inner">
          <div class="dialog-head">
            <h2 id={titleId}>{title}</h2>
            <button type="button" class="icon-button" aria-label="Close" onClick={onClose}>
              <span aria-hidden="true">×</span>
            </button>
          </div>
          <div class="dialog-body">{children}</div>
          {footer && <div class="dialog-foot">{footer}</div>}
        </div>
      )}
    </dialog>
  );
}
