import type { FastifyReply, FastifyRequest } from 'fastify';
import { createHash } from 'node:crypto';
import type { PanelAuthConfig } from '../config.ts';
import { HeraldError } from '../errors.ts';
import { apiKeyPrefix } from '../core/secrets.ts';
import { authenticate, bearerToken, UNAUTHORIZED_DETAIL } from '../services/accounts.ts';
import type { ServiceDeps } from '../services/deps.ts';
import { csrfTokenMatches, findSession } from '../services/users.ts';
import { findPortalSession, isPortalSessionToken } from '../services/portal-sessions.ts';
import { checkPortalAccess } from './portal-access.ts';
import type { SessionRow } from '../storage/queries/users.ts';
import type { UnauthenticatedLimiter } from './unauthenticated-limiter.ts';

/** Who made a request: an API key, a user signed in to the panel, or the panel embedded in another site (a portal session). */
export type Principal =
  | { kind: 'api_key'; keyId: string }
  | { kind: 'session'; userId: string; sessionId: string }
  | { kind: 'portal'; portalSessionId: string; readOnly: boolean };

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Reached without credentials (sign-in, first-run setup); the route checks what it needs itself. */
    public?: boolean;
  }
}

/**
 * The session cookie. Behind TLS it is `__Host-herald_session`: the prefix
 * makes the browser refuse it unless it is Secure, host-only and for `/`.
 */
export const SESSION_COOKIE = 'herald_session';
export const SECURE_SESSION_COOKIE = '__Host-herald_session';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export function cookieIsSecure(request: FastifyRequest, mode: PanelAuthConfig['cookieSecure']): boolean {
  if (mode !== 'auto') return mode === 'always';
  const forwarded = String(request.headers['x-forwarded-proto'] ?? '').split(',')[0]!.trim().toLowerCase();
  return request.protocol === 'https' || forwarded === 'https';
}

export function sessionToken(request: FastifyRequest): string | undefined {
  return request.cookies[SECURE_SESSION_COOKIE] ?? request.cookies[SESSION_COOKIE];
}

export function setSessionCookie(reply: FastifyReply, token: string, expiresAt: Date, now: Date, mode: PanelAuthConfig['cookieSecure']): void {
  const secure = cookieIsSecure(reply.request, mode);
  reply.setCookie(secure ? SECURE_SESSION_COOKIE : SESSION_COOKIE, token, {
    httpOnly: true,
    secure,
    sameSite: 'lax',
    path: '/',
    maxAge: Math.max(0, Math.floor((expiresAt.getTime() - now.getTime()) / 1000)),
  });
}

export function clearSessionCookie(reply: FastifyReply): void {
  for (const [name, secure] of [[SESSION_COOKIE, false], [SECURE_SESSION_COOKIE, true]] as const) {
    if (reply.request.cookies[name] !== undefined) reply.clearCookie(name, { path: '/', httpOnly: true, secure, sameSite: 'lax' });
  }
}

/**
 * A state-changing request made with the session cookie must prove it comes
 * from the panel: the `X-CSRF-Token` header (an HMAC of the session token,
 * which only a page of Herald's origin can read) and, where the browser says
 * where it comes from, the same origin.
 */
export function checkCsrf(request: FastifyRequest, token: string): void {
  const origin = request.headers.origin;
  const site = request.headers['sec-fetch-site'];
  let sameOrigin = true;
  if (origin !== undefined) {
    try {
      sameOrigin = new URL(origin).host === request.headers.host;
    } catch {
      sameOrigin = false;
    }
  }
  if (site !== undefined && site !== 'same-origin' && site !== 'none') sameOrigin = false;
  if (!sameOrigin) {
    throw new HeraldError('csrf_failed', `this request came from ${origin ?? 'another site'}, not from the panel; the panel's own requests are accepted only from its own origin`);
  }
  const sent = request.headers['x-csrf-token'];
  if (!csrfTokenMatches(token, Array.isArray(sent) ? sent[0] : sent)) {
    throw new HeraldError('csrf_failed', 'send the csrf_token of GET /v1/session in the X-CSRF-Token header with every request that changes something (the panel does); reload the panel if it was open before you signed in again');
  }
}

/** The request's live panel session, checking CSRF on state-changing methods; undefined without one. */
export async function requestSession(request: FastifyRequest, deps: ServiceDeps, panel: PanelAuthConfig): Promise<{ token: string; session: SessionRow } | undefined> {
  const token = sessionToken(request);
  if (!token) return undefined;
  const session = await findSession(deps.db, token, deps.clock(), panel);
  if (!session) return undefined;
  if (!SAFE_METHODS.has(request.method)) checkCsrf(request, token);
  return { token, session };
}

/**
 * Authenticates every /v1 request but the public ones: an API key in
 * `Authorization` (it wins when both are sent), or the panel's session cookie.
 * Failures are limited per client before any lookup (UnauthenticatedLimiter),
 * without refusing a well-formed credential for someone else's failures.
 */
export function authHook(deps: ServiceDeps, panel: PanelAuthConfig, limiter: UnauthenticatedLimiter) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    if (request.routeOptions.config.public) return;
    const credential = credentialOf(request);
    let admission = limiter.admit(request.ip, credential, deps.clock().getTime());
    while (admission.action === 'after') {
      await admission.checked;
      admission = limiter.admit(request.ip, credential, deps.clock().getTime());
    }
    if (admission.action === 'wait') {
      reply.header('retry-after', String(admission.seconds));
      throw new HeraldError(
        'rate_limited',
        `more than ${limiter.perMinute} requests a minute from this address had no valid credentials; retry in ${admission.seconds} s with a valid API key or panel session (the operator sets this limit with HERALD_UNAUTHENTICATED_RATE_LIMIT)`,
      );
    }
    if (admission.action === 'fail') throw unauthorized(request);
    const { ticket } = admission;
    try {
      await identify(request, deps, panel);
    } catch (err) {
      if (err instanceof HeraldError && err.code === 'unauthorized') limiter.failed(ticket, deps.clock().getTime());
      else limiter.release(ticket);
      throw err;
    }
    limiter.accepted(ticket, deps.clock().getTime());
    if (request.principal?.kind === 'portal') checkPortalAccess(request, request.principal.readOnly);
  };
}

/** A session token as Herald makes them: 32 random bytes, base64url. Anything else is refused without a lookup. */
const SESSION_TOKEN = /^[A-Za-z0-9_-]{43}$/;

/**
 * What names a well-formed credential without revealing it (a hash of the
 * whole key or token, so that failures with someone's key prefix never
 * count against the key itself); undefined without one, or for a malformed one.
 */
function credentialOf(request: FastifyRequest): string | undefined {
  const hash = (text: string) => createHash('sha256').update(text).digest('base64url');
  if (request.headers.authorization !== undefined) {
    const key = bearerToken(request.headers.authorization);
    return key && (apiKeyPrefix(key) || isPortalSessionToken(key)) ? `key:${hash(key)}` : undefined;
  }
  const token = sessionToken(request);
  return token && SESSION_TOKEN.test(token) ? `session:${hash(token)}` : undefined;
}

function unauthorized(request: FastifyRequest): HeraldError {
  return new HeraldError(
    'unauthorized',
    sessionToken(request) && request.headers.authorization === undefined
      ? 'your panel session has ended (signed out, idle too long or expired); sign in again'
      : UNAUTHORIZED_DETAIL,
  );
}

async function identify(request: FastifyRequest, deps: ServiceDeps, panel: PanelAuthConfig): Promise<void> {
  const bearer = bearerToken(request.headers.authorization);
  if (bearer !== undefined && isPortalSessionToken(bearer)) {
    // An embedded panel's session: the token it holds in memory, sent like a key.
    const portal = await findPortalSession(deps.db, bearer, deps.clock());
    if (!portal) throw new HeraldError('unauthorized', 'this embedded panel\'s session has ended (signed out or expired); reopen the page that embeds it for a new one');
    request.accountId = portal.account_id;
    request.principal = { kind: 'portal', portalSessionId: portal.id, readOnly: portal.read_only };
    return;
  }
  if (request.headers.authorization !== undefined) {
    const auth = await authenticate(deps, request.headers.authorization);
    request.accountId = auth.accountId;
    request.principal = { kind: 'api_key', keyId: auth.keyId };
    return;
  }
  const found = await requestSession(request, deps, panel);
  if (found) {
    request.accountId = found.session.account_id;
    request.principal = { kind: 'session', userId: found.session.user_id, sessionId: found.session.session_id };
    return;
  }
  throw unauthorized(request);
}
