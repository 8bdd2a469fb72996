/**
 * First-run setup's one-time token. Herald prints a link with it in the
 * fragment (`/setup#token=…`), which the browser never sends to a server.
 * The panel takes it from the address bar at once (so it stays out of the
 * history and off the screen) and keeps it in this tab's sessionStorage,
 * so a reload of the setup screen still has it; it is forgotten once setup
 * is done or refused.
 */
const KEY = 'herald.setup-token';

export function takeSetupToken(): string | undefined {
  const fromLink = new URLSearchParams(location.hash.slice(1)).get('token');
  if (fromLink) {
    sessionStorage.setItem(KEY, fromLink);
    history.replaceState(history.state, '', location.pathname + location.search);
  }
  return sessionStorage.getItem(KEY) ?? undefined;
}

export function forgetSetupToken(): void {
  sessionStorage.removeItem(KEY);
}
