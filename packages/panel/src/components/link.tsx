import type { ComponentChildren, JSX } from 'preact';
import { navigate } from '../lib/router.ts';

type Props = JSX.HTMLAttributes<HTMLAnchorElement> & { href: string; children: ComponentChildren };

/** A real link (open in a new tab, copy address) that navigates in place on a plain click. */
export function Link({ href, onClick, children, ...rest }: Props) {
  return (
    <a
      {...rest}
      href={href}
      onClick={(e) => {
        onClick?.(e);
        if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
        e.preventDefault();
        navigate(href);
      }}
    >
      {children}
    </a>
  );
}
