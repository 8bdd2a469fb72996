import { useCallback, useEffect, useMemo, useState } from 'preact/hooks';
import { onSessionExpired, setCsrfToken, type ApiError } from './api/client.ts';
import { getSession, getSetup, signOut } from './api/herald.ts';
import type { Session } from './api/types.ts';
import { ErrorAlert } from './components/alert.tsx';
import { Loading } from './components/loading.tsx';
import { Shell } from './components/shell.tsx';
import { navigate, parseRoute, paths, useLocation, type Route } from './lib/router.ts';
import { SessionContext } from './lib/session.ts';
import { closePortal, openPortal, takePortalToken, type PortalInfo } from './lib/portal.ts';
import { takeSetupToken } from './lib/setup-token.ts';
import { asApiError } from './lib/use-resource.ts';
import { ApiKeys } from './screens/api-keys.tsx';
import { EventCatalog } from './screens/event-catalog.tsx';
import { EndpointDetail } from './screens/endpoint-detail.tsx';
import { EndpointEdit } from './screens/endpoint-edit.tsx';
import { EndpointList } from './screens/endpoint-list.tsx';
import { EndpointNew } from './screens/endpoint-new.tsx';
import { EventDetailScreen } from './screens/events/event-detail.tsx';
import { EventList } from './screens/events/event-list.tsx';
import { ReplayList } from './screens/events/replay-list.tsx';
import { NotFound } from './screens/not-found.tsx';
import { SignIn } from './screens/sign-in.tsx';
import { Setup } from './screens/setup.tsx';

type Boot =
  | { state: 'loading' }
  | { state: 'error'; error: ApiError }
  | { state: 'setup' }
  | { state: 'signed-out'; notice?: string }
  | { state: 'signed-in'; session: Session; portal?: PortalInfo }
  /** An embedded panel whose session ended: only the page around it can open a new one. */
  | { state: 'portal-ended'; notice: string };

/** Where to go after signing in: the page the user asked for, if it is one of ours. */
function nextPath(search: string): string {
  const next = new URLSearchParams(search).get('next');
  return next && next.startsWith('/') && !next.startsWith('//') && !next.startsWith(paths.signIn) ? next : paths.webhooks;
}

export function App() {
  const [boot, setBoot] = useState<Boot>({ state: 'loading' });
  // Read before anything rewrites the address bar.
  const [portalToken] = useState(takePortalToken);
  // Embedded in another site, the panel may not touch storage (browsers refuse it to third-party frames).
  const [setupToken, setSetupToken] = useState(() => (portalToken ? undefined : takeSetupToken()));
  // The link pasted into a tab already on the setup screen changes only the fragment: no reload.
  useEffect(() => {
    if (portalToken) return;
    const update = () => setSetupToken(takeSetupToken());
    window.addEventListener('hashchange', update);
    return () => window.removeEventListener('hashchange', update);
  }, []);
  const where = useLocation();
  const url = useMemo(() => new URL(where, location.origin), [where]);
  const route = parseRoute(url.pathname);

  const start = useCallback(async () => {
    setBoot({ state: 'loading' });
    try {
      if (portalToken) {
        const { session, portal } = await openPortal(portalToken);
        // The address held the one-time link; it opens nothing a second time.
        navigate(paths.webhooks, { replace: true });
        return setBoot({ state: 'signed-in', session, portal });
      }
      if ((await getSetup()).needed) return setBoot({ state: 'setup' });
      const session = await getSession();
      if (!session) return setBoot({ state: 'signed-out' });
      setCsrfToken(session.csrf_token);
      setBoot({ state: 'signed-in', session });
    } catch (err) {
      setBoot({ state: 'error', error: asApiError(err) });
    }
  }, []);

  useEffect(() => {
    onSessionExpired(() => {
      if (portalToken) return setBoot({ state: 'portal-ended', notice: 'This panel\u2019s session has ended. Reload the page to open it again.' });
      setCsrfToken(undefined);
      setBoot({ state: 'signed-out', notice: 'Your session has ended. Sign in again to continue.' });
    });
    void start();
  }, []);

  // Keep the address bar in step with what is shown.
  useEffect(() => {
    if (boot.state === 'setup' && route.name !== 'setup') navigate(paths.setup, { replace: true });
    if (boot.state === 'signed-out' && route.name !== 'sign-in') {
      const here = url.pathname + url.search;
      navigate(here === '/' || route.name === 'setup' ? paths.signIn : `${paths.signIn}?next=${encodeURIComponent(here)}`, { replace: true });
    }
    if (boot.state === 'signed-in' && (route.name === 'sign-in' || route.name === 'setup')) navigate(nextPath(url.search), { replace: true });
    if (boot.state === 'signed-in' && url.pathname === '/') navigate(paths.webhooks, { replace: true });
  }, [boot.state, route.name, url]);

  const signedIn = (session: Session) => {
    setCsrfToken(session.csrf_token);
    setBoot({ state: 'signed-in', session });
    navigate(nextPath(url.search), { replace: true });
  };

  const context = useMemo(
    () =>
      boot.state === 'signed-in'
        ? {
            session: boot.session,
            portal: boot.portal,
            async signOut() {
              if (boot.portal) {
                await closePortal();
                return setBoot({ state: 'portal-ended', notice: 'You have signed out. Reload the page to open the panel again.' });
              }
              // Signed out on the server or not, the panel forgets the session.
              await signOut().catch(() => undefined);
              setCsrfToken(undefined);
              setBoot({ state: 'signed-out', notice: 'You have signed out.' });
              navigate(paths.signIn);
            },
          }
        : undefined,
    [boot],
  );

  switch (boot.state) {
    case 'loading':
      return (
        <main class="auth" id="main">
          <Loading label="Loading Herald…" />
        </main>
      );
    case 'error':
      return (
        <main class="auth" id="main">
          <div class="auth-card">
            <ErrorAlert error={boot.error} title="The control panel could not start" onRetry={start} />
          </div>
        </main>
      );
    case 'portal-ended':
      return (
        <main class="auth" id="main">
          <div class="auth-card" data-testid="portal-ended">
            <p>{boot.notice}</p>
          </div>
        </main>
      );
    case 'setup':
      return <Setup token={setupToken} onSignedIn={signedIn} />;
    case 'signed-out':
      return <SignIn onSignedIn={signedIn} notice={boot.notice} />;
    case 'signed-in':
      return (
        <SessionContext.Provider value={context}>
          <Shell>
            <Screen route={route} search={url.searchParams} />
          </Shell>
        </SessionContext.Provider>
      );
  }
}

function Screen({ route, search }: { route: Route; search: URLSearchParams }) {
  switch (route.name) {
    case 'webhooks':
    case 'sign-in':
    case 'setup':
      return <EndpointList notice={search.has('deleted') ? 'The endpoint was deleted.' : undefined} />;
    case 'new-endpoint':
      return <EndpointNew />;
    case 'endpoint':
      return <EndpointDetail key={route.id} id={route.id} notice={search.has('saved') ? 'Changes saved.' : undefined} />;
    case 'edit-endpoint':
      return <EndpointEdit key={route.id} id={route.id} />;
    case 'events':
      return <EventList search={search} />;
    case 'event':
      return <EventDetailScreen key={route.id} id={route.id} />;
    case 'replays':
      return <ReplayList created={search.get('created') ?? undefined} />;
    case 'api-keys':
      return <ApiKeys />;
    case 'event-types':
      return <EventCatalog />;
    case 'not-found':
      return <NotFound />;
  }
}
