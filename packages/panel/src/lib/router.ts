import { useEffect, useState } from 'preact/hooks';

/**
 * A few routes, so a few lines: the History API and one event. Herald serves
 * index.html for every non-API path a browser asks for, so these URLs can be
 * bookmarked and reloaded.
 */

export const paths = {
  webhooks: '/settings/webhooks',
  newEndpoint: '/settings/webhooks/new',
  endpoint: (id: string) => `/settings/webhooks/${encodeURIComponent(id)}`,
  editEndpoint: (id: string) => `/settings/webhooks/${encodeURIComponent(id)}/edit`,
  events: '/events',
  event: (id: string) => `/events/${encodeURIComponent(id)}`,
  replays: '/events/replays',
  apiKeys: '/settings/api-keys',
  eventTypes: '/settings/event-types',
  signIn: '/sign-in',
  setup: '/setup',
} as const;

export type Route =
  | { name: 'webhooks' }
  | { name: 'new-endpoint' }
  | { name: 'endpoint'; id: string }
  | { name: 'edit-endpoint'; id: string }
  | { name: 'events' }
  | { name: 'event'; id: string }
  | { name: 'replays' }
  | { name: 'api-keys' }
  | { name: 'event-types' }
  | { name: 'sign-in' }
  | { name: 'setup' }
  | { name: 'not-found' };

export function parseRoute(pathname: string): Route {
  const path = pathname.replace(/\/+$/, '') || '/';
  if (path === '/' || path === '/settings' || path === paths.webhooks) return { name: 'webhooks' };
  if (path === paths.newEndpoint) return { name: 'new-endpoint' };
  if (path === paths.apiKeys) return { name: 'api-keys' };
  if (path === paths.eventTypes) return { name: 'event-types' };
  if (path === paths.signIn) return { name: 'sign-in' };
  if (path === paths.setup) return { name: 'setup' };
  if (path === paths.events) return { name: 'events' };
  if (path === paths.replays) return { name: 'replays' };
  const event = /^\/events\/([^/]+)$/.exec(path);
  if (event) return { name: 'event', id: decodeURIComponent(event[1]!) };
  const m = /^\/settings\/webhooks\/([^/]+)(\/edit)?$/.exec(path);
  if (m) {
    const id = decodeURIComponent(m[1]!);
    return m[2] ? { name: 'edit-endpoint', id } : { name: 'endpoint', id };
  }
  return { name: 'not-found' };
}

const CHANGE = 'herald:navigate';

export function navigate(to: string, { replace = false } = {}): void {
  if (to === location.pathname + location.search) return;
  if (replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  window.dispatchEvent(new Event(CHANGE));
}

/** The current path and query; re-renders on navigate() and on Back/Forward. */
export function useLocation(): string {
  const [where, setWhere] = useState(() => location.pathname + location.search);
  useEffect(() => {
    const update = () => setWhere(location.pathname + location.search);
    window.addEventListener('popstate', update);
    window.addEventListener(CHANGE, update);
    return () => {
      window.removeEventListener('popstate', update);
      window.removeEventListener(CHANGE, update);
    };
  }, []);
  return where;
}
