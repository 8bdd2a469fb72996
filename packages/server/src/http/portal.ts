import type { FastifyInstance, FastifyReply } from 'fastify';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Clock } from '../core/clock.ts';
import { openPortalLink } from '../services/portal-sessions.ts';
import type { Queryable } from '../storage/db.ts';
import { PANEL_CSP } from './panel.ts';

export interface PortalPageOptions {
  /** The built control panel, as for panelRoutes. */
  root: string;
  db: Queryable;
  clock: Clock;
}

/** Where the panel finds its session token: a meta tag of the page the link opened. */
export const PORTAL_TOKEN_META = 'herald-portal-token';

/**
 * The panel's policy, framed by exactly `origins` and showing images from
 * the logo's origin too. Each origin was validated as `scheme://host[:port]`
 * when the link was made, so none can carry a `;` or a space.
 */
export function portalCsp(origins: readonly string[], logoUrl: string | null): string {
  return PANEL_CSP.split('; ')
    .map((directive) => {
      if (directive.startsWith('frame-ancestors ')) return `frame-ancestors ${origins.length ? origins.join(' ') : "'none'"}`;
      if (directive.startsWith('img-src ') && logoUrl) return `${directive} ${new URL(logoUrl).origin}`;
      return directive;
    })
    .join('; ');
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function errorPage(title: string, detail: string): string {
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(title)} · Herald</title></head>
<body>
<main id="portal-error">
<h1>${escapeHtml(title)}</h1>
<p>${escapeHtml(detail)}</p>
</main>
</body>
</html>
`;
}

/**
 * `GET /portal/<link token>`: opens a portal link, once. The first open turns
 * the link into a session and serves the panel with the session's token in a
 * meta tag (the panel keeps it in memory and sends it as a bearer token), with
 * a Content-Security-Policy whose `frame-ancestors` lists exactly the link's
 * origins and no X-Frame-Options (which cannot name origins). Any later open
 * gets a page saying the link was used, framable by the same origins so that
 * the embedding page shows it.
 */
export async function portalPageRoutes(app: FastifyInstance, { root, db, clock }: PortalPageOptions): Promise<void> {
  const index = join(resolve(root), 'index.html');

  function page(reply: FastifyReply, status: number, csp: string, html: string): FastifyReply {
    return reply
      .code(status)
      .headers({
        'content-type': 'text/html; charset=utf-8',
        'cache-control': 'no-store',
        'content-security-policy': csp,
        'x-content-type-options': 'nosniff',
        // The address holds the link's token: never sent anywhere, even to Herald's own assets.
        'referrer-policy': 'no-referrer',
      })
      .send(html);
  }

  // GET only: a HEAD (a link checker, a preview) must not use the link up.
  app.get<{ Params: { token: string } }>('/portal/:token', { schema: { hide: true }, exposeHeadRoute: false }, async (request, reply) => {
    const html = await readFile(index, 'utf8').catch(() => undefined);
    if (html === undefined) {
      return page(reply, 503, "default-src 'none'; frame-ancestors 'none'", errorPage('The control panel is not built', 'The operator must build it (npm run build -w @herald/panel); then ask for a new link.'));
    }
    const opened = await openPortalLink(db, request.params.token, clock());
    if (!opened.opened) {
      const ancestors = opened.reason === 'unknown' ? [] : opened.link.allowed_origins;
      const csp = `default-src 'none'; frame-ancestors ${ancestors.length ? ancestors.join(' ') : "'none'"}`;
      if (opened.reason === 'used') {
        return page(reply, 410, csp, errorPage('This link was already used', 'A panel link opens once. Reload the page around this panel to get a new one.'));
      }
      if (opened.reason === 'expired') {
        return page(reply, 410, csp, errorPage('This link has expired', 'A panel link opens only for a few minutes after it is made. Reload the page around this panel to get a new one.'));
      }
      return page(reply, 404, csp, errorPage('This link is not valid', 'Check that the whole link was copied, or reload the page around this panel to get a new one.'));
    }
    const { session, token } = opened;
    const withToken = html.replace('</head>', `<meta name="${PORTAL_TOKEN_META}" content="${token}">\n</head>`);
    return page(reply, 200, portalCsp(session.allowed_origins, session.logo_url), withToken);
  });
}

/** For log lines: a portal link's path without its token. */
export function withoutPortalToken(url: string): string {
  return url.replace(/^\/portal\/[^/?#]*/, '/portal/[redacted]');
}
