import type { ComponentChildren } from 'preact';
import { useEffect, useRef } from 'preact/hooks';

/**
 * The page's h1. It takes focus when the page appears, so keyboard and
 * screen-reader users start at the top of the new content after navigating.
 */
export function PageHeader({ title, docTitle, children, actions, before }: { title: ComponentChildren; docTitle: string; children?: ComponentChildren; actions?: ComponentChildren; before?: ComponentChildren }) {
  const h1 = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${docTitle} · Herald`;
  }, [docTitle]);
  useEffect(() => {
    if (!document.querySelector('dialog[open]')) h1.current?.focus({ preventScroll: true });
  }, []);
  return (
    <header class="page-header">
      {before}
      <div class="page-header-row">
        <div class="page-header-text">
          <h1 ref={h1} tabIndex={-1}>
            {title}
          </h1>
          {children && <div class="page-lede">{children}</div>}
        </div>
        {actions && <div class="page-actions">{actions}</div>}
      </div>
    </header>
  );
}
