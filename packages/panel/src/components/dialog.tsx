import type { ComponentChildren } from 'preact';
import { useId, useLayoutEffect, useRef } from 'preact/hooks';

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
  const openRef = useRef(open);
  openRef.current = open;

  // Focus goes back to the opener as soon as the dialog closes: the `close`
  // event comes a task later, and a keypress in between would land on <body>.
  const restoreFocus = () => {
    const back = opener.current;
    opener.current = null;
    if (back instanceof HTMLElement && back.isConnected) back.focus();
  };
  const restoreRef = useRef(restoreFocus);
  restoreRef.current = restoreFocus;

  // Listening starts in a layout effect too, before the one below can open
  // the dialog: an effect runs only after the next frame is painted, and an
  // Esc pressed before then closed the dialog with no one listening, leaving
  // the parent sure it was still open (and unable to open it again).
  useLayoutEffect(() => {
    const dialog = ref.current!;
    // Esc: let the parent decide (it owns `open`); the browser would close it behind its back.
    const cancel = (e: Event) => {
      e.preventDefault();
      onCloseRef.current();
    };
    // Closed another way (a form with method="dialog", or Esc that the browser does not let
    // be cancelled, as Chromium does for a second Esc without a click in between): tell the
    // parent, which still thinks it open and could not open it again otherwise.
    const closed = () => {
      restoreRef.current();
      if (openRef.current) onCloseRef.current();
    };
    dialog.addEventListener('cancel', cancel);
    dialog.addEventListener('close', closed);
    return () => {
      dialog.removeEventListener('cancel', cancel);
      dialog.removeEventListener('close', closed);
      if (dialog.open) dialog.close();
    };
  }, []);

  // A layout effect: the dialog opens or closes in the same task as its
  // content appears or goes, never showing an open, empty dialog in between.
  useLayoutEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (open && !dialog.open) {
      opener.current = document.activeElement;
      dialog.showModal();
    } else if (!open && dialog.open) {
      dialog.close();
      restoreFocus();
    }
  }, [open]);

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
