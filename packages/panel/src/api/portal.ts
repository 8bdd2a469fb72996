import { request } from './client.ts';
import type { Account } from './types.ts';

/** How the page that embeds the panel asked it to look. */
export interface PortalTheme {
  accent_color: string | null;
  logo_url: string | null;
  hide_sign_out: boolean;
}

/** GET /v1/portal-session: the embedded panel's own session. */
export interface PortalSession {
  id: string;
  account: Account;
  read_only: boolean;
  theme: PortalTheme;
  expires_at: string;
}

export const getPortalSession = () => request<PortalSession>('GET', '/v1/portal-session');

export const endPortalSession = () => request<void>('DELETE', '/v1/portal-session', { expect401: true });
