import type { FastifyRequest } from 'fastify';
import { HeraldError } from '../errors.ts';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * What a portal session may reach: the account's endpoints (and their
 * attempts), the event types, the events and their redelivery, and its own
 * session. An allow-list, so a route added later stays out of an embedded
 * panel until someone decides it belongs there. Out: the account's API keys
 * (a portal user must not mint keys that publish as the platform),
 * publishing events (the platform publishes), and making more portal links.
 */
function reachable(method: string, route: string): boolean {
  if (route === '/v1/portal-session') return true;
  if (route === '/v1/endpoints' || route.startsWith('/v1/endpoints/')) return true;
  if (route === '/v1/event-types' || route.startsWith('/v1/event-types/')) return SAFE_METHODS.has(method);
  if (route === '/v1/events' || route.startsWith('/v1/events/')) {
    return SAFE_METHODS.has(method) || (method === 'POST' && route === '/v1/events/:id/redeliver');
  }
  return false;
}

/**
 * Refuses what a portal session may not do, before the route runs: anything
 * outside the allow-list (`not_in_portal`), and in a read-only session every
 * request that would change something (`read_only_session`). Signing out is
 * not a change to the account, so a read-only session may still end itself.
 */
export function checkPortalAccess(request: FastifyRequest, readOnly: boolean): void {
  const route = request.routeOptions.url ?? request.url;
  const method = request.method;
  if (readOnly && !SAFE_METHODS.has(method) && !(route === '/v1/portal-session' && method === 'DELETE')) {
    throw new HeraldError(
      'read_only_session',
      `this portal session is read-only: it can look but not change anything (${method} ${route} refused); the site that embeds the panel decides this when it opens it`,
    );
  }
  if (!reachable(method, route)) {
    throw new HeraldError('not_in_portal', `${method} ${route} is not available in an embedded panel (a portal session); use an API key of the account`);
  }
}
