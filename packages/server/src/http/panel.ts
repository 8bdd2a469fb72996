import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { stat } from 'node:fs/promises';
import { join, resolve, sep } from 'node:path';

export interface PanelOptions {
  /** Absolute path of the built control panel (`npm run build -w @herald/panel` writes it). */
  root: string;
}

/**
 * The panel is one origin with the API and loads nothing from anywhere else:
 * no inline script or style, no data: URLs, no frames. A cross-site script
 * that slipped into a page could not run, and could not send a secret shown
 * in the panel to another host.
 */
export const PANEL_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** Vite names every file under assets/ by its content hash, so a name never changes meaning. */
const ASSETS = 'assets/';
const IMMUTABLE = 'public, max-age=31536000, immutable';

const NOT_BUILT_PAGE = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Control panel not built · Herald</title></head>
<body>
<h1>The control panel is not built</h1>
<p>Herald is running and its API answers under <code>/v1</code>, but the files of the control panel are missing.</p>
<p>Operator: build it, then reload this page (no restart needed):</p>
<pre>npm run build -w @herald/panel</pre>
<p>(<code>npm ci</code> and <code>npm start</code> in Herald's folder build it too.)</p>
</body>
</html>
`;

async function isFile(path: string): Promise<boolean> {
  return stat(path).then(
    (s) => s.isFile(),
    () => false,
  );
}

function wantsHtml(request: FastifyRequest): boolean {
  return (request.headers.accept ?? '').includes('text/html');
}

/**
 * Serves the control panel at `/` beside the API: its files from `root`, and
 * index.html for any other page a browser asks for (the panel routes on the
 * client), so /settings/webhooks/… can be bookmarked and reloaded. /v1 is
 * never answered here. When the panel has not been built, pages get a 503
 * that tells the operator the command to run; Herald itself keeps working.
 *
 * @example
 * await app.register(panelRoutes, { root: '/srv/herald/packages/panel/dist' });
 */
export async function panelRoutes(app: FastifyInstance, { root }: PanelOptions): Promise<void> {
  const base = resolve(root);
  const index = join(base, 'index.html');
  if (!(await isFile(index))) {
    app.log.warn(`the control panel is not built (no ${index}); run "npm run build -w @herald/panel". Until then / answers 503.`);
  }
  // sendFile only: this file decides which paths map to files.
  await app.register(fastifyStatic, { root: base, serve: false, decorateReply: true, cacheControl: false });

  app.addHook('onRequest', async (_request, reply) => {
    reply.headers({
      'content-security-policy': PANEL_CSP,
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'same-origin',
      'x-frame-options': 'DENY',
    });
  });

  async function sendIndex(reply: FastifyReply): Promise<FastifyReply> {
    if (!(await isFile(index))) {
      return reply
        .code(503)
        .headers({ 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', 'content-security-policy': "default-src 'none'", 'retry-after': '60' })
        .send(NOT_BUILT_PAGE);
    }
    // Revalidated on every load (ETag), so a new build shows up at once.
    return reply.header('cache-control', 'no-cache').sendFile('index.html');
  }

  app.get<{ Params: { '*': string } }>('/*', { schema: { hide: true } }, async (request, reply) => {
    const path = request.params['*'];
    if (path === 'v1' || path.startsWith('v1/')) return reply.callNotFound();
    if (path === '' || path === 'index.html') return sendIndex(reply);

    const file = resolve(base, path);
    if (file.startsWith(base + sep) && (await isFile(file))) {
      return reply.header('cache-control', path.startsWith(ASSETS) ? IMMUTABLE : 'no-cache').sendFile(path);
    }
    // A missing hashed asset is a 404, never the page: a browser must not run HTML as a script.
    if (!path.startsWith(ASSETS) && wantsHtml(request)) return sendIndex(reply);
    return reply.callNotFound();
  });
}
