import { setPortalToken } from '../api/client.ts';
import { endPortalSession, getPortalSession, type PortalTheme } from '../api/portal.ts';
import type { Session } from '../api/types.ts';

/**
 * The panel embedded in another site's page (a portal session). Herald puts
 * the session's token in a meta tag of the page that the one-time link
 * opened; the panel takes it out of the document at once and keeps it in
 * memory only. No cookie: a browser that blocks third-party cookies in
 * frames (or partitions them) would drop one, and a cookie would be sent
 * with cross-site requests that the token never is.
 */
const META = 'herald-portal-token';

/** The portal session's token, once; undefined for the ordinary panel. */
export function takePortalToken(): string | undefined {
  const meta = document.querySelector<HTMLMetaElement>(`meta[name="${META}"]`);
  if (!meta) return undefined;
  meta.remove();
  return /^hps_[A-Za-z0-9_-]{43}$/.test(meta.content) ? meta.content : undefined;
}

/**
 * Applies the embedding site's accent colour (through the CSSOM: the panel's
 * CSP allows no inline style) and marks the document as embedded and, when
 * so, read-only: portal.css then hides every control marked `data-changes`.
 */
export function applyPortalLook(theme: PortalTheme, readOnly: boolean): void {
  const root = document.documentElement;
  root.dataset.portal = '';
  if (readOnly) root.dataset.readOnly = '';
  if (theme.accent_color && /^#[0-9a-f]{6}$/i.test(theme.accent_color)) {
    root.style.setProperty('--accent', theme.accent_color);
    root.dataset.accent = '';
  }
}

/** What the shell needs to know about an embedded panel. */
export interface PortalInfo {
  readOnly: boolean;
  theme: PortalTheme;
}

/**
 * Starts the embedded panel with its token: every request carries it from
 * now on; the session's account, look and read-only flag come from Herald.
 * Answers in the shape of an ordinary sign-in, without a user (a portal
 * session is the account's, not a person's) or a CSRF token (nothing sends
 * the bearer token by itself, so there is nothing to forge).
 */
export async function openPortal(token: string): Promise<{ session: Session; portal: PortalInfo }> {
  setPortalToken(token);
  const found = await getPortalSession();
  applyPortalLook(found.theme, found.read_only);
  return {
    session: { user: { id: '', email: '', name: '' }, account: found.account, csrf_token: '' },
    portal: { readOnly: found.read_only, theme: found.theme },
  };
}

/** Ends the embedded panel's session; the token is forgotten whatever Herald answered. */
export async function closePortal(): Promise<void> {
  await endPortalSession().catch(() => undefined);
  setPortalToken(undefined);
}
