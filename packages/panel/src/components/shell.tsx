import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { paths, useLocation } from '../lib/router.ts';
import { useSession } from '../lib/session.ts';
import { Link } from './link.tsx';

/** The frame around signed-in screens: brand (or an embedding site's logo), account, sign-out, and Settings → Webhooks. */
export function Shell({ children }: { children: ComponentChildren }) {
  const { session, signOut, portal } = useSession();
  const logo = portal?.theme.logo_url;
  const [leaving, setLeaving] = useState(false);
  return (
    <div class="shell">
      <a class="skip-link" href="#main">
        Skip to content
      </a>
      <header class="topbar">
        <Link href={paths.webhooks} class="brand">
          {logo ? (
            <img src={logo} alt={session.account.name} class="portal-logo" data-testid="portal-logo" />
          ) : (
            <>
              <img src="/favicon.svg" alt="" width={24} height={24} />
              <span>Herald</span>
            </>
          )}
        </Link>
        <span class="account" data-testid="account-name">
          {session.account.name}
        </span>
        <div class="topbar-user">
          {portal?.readOnly && (
            <span class="read-only-note" data-testid="read-only-note">
              View only
            </span>
          )}
          {!portal && (
            <span class="user-name" title={session.user.email}>
              {session.user.name || session.user.email}
            </span>
          )}
          {!portal?.theme.hide_sign_out && (
            <button
              type="button"
              class="btn btn-ghost btn-small"
              disabled={leaving}
              onClick={async () => {
                setLeaving(true);
                await signOut().finally(() => setLeaving(false));
              }}
            >
              Sign out
            </button>
          )}
        </div>
      </header>
      <div class="layout">
        <nav class="sidenav" aria-label="Settings">
          <p class="sidenav-heading">Settings</p>
          <ul>
            <NavItem href={paths.webhooks} label="Webhooks" />
            <NavItem href={paths.events} label="Events" />
            <NavItem href={paths.eventTypes} label="Event catalog" />
            {!portal && <NavItem href={paths.apiKeys} label="API keys" />}
          </ul>
        </nav>
        <main id="main" class="main" tabIndex={-1}>
          {children}
        </main>
      </div>
    </div>
  );
}

/** A link of the side navigation, marked current on its page and the pages under it. */
function NavItem({ href, label }: { href: string; label: string }) {
  const where = useLocation().split('?')[0]!;
  const current = where === href || where.startsWith(`${href}/`);
  return (
    <li>
      <Link href={href} class="sidenav-link" aria-current={current ? 'page' : undefined}>
        {label}
      </Link>
    </li>
  );
}
