import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { Session } from '../api/types.ts';
import type { PortalInfo } from './portal.ts';

export interface SessionContextValue {
  session: Session;
  signOut(): Promise<void>;
  /** Set when the panel is embedded in another site's page (a portal session). */
  portal?: PortalInfo;
}

export const SessionContext = createContext<SessionContextValue | undefined>(undefined);

/** The signed-in user and account; only screens behind sign-in use it. */
export function useSession(): SessionContextValue {
  const value = useContext(SessionContext);
  if (!value) throw new Error('useSession outside a signed-in screen');
  return value;
}
