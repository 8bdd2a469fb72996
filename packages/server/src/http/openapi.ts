import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { readFileSync } from 'node:fs';
import { DOCS_THEME } from './docs-theme.ts';
import { problems } from './schemas.ts';

const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
const MUTATING = new Set(['POST', 'PATCH', 'PUT', 'DELETE']);

const DESCRIPTION = `Herald's management API: everything the control panel does, and more.

**Authentication.** Send an API key as \`Authorization: Bearer hk_…\`. Keys belong to one account and see only its data: another account's objects answer 404, as if they did not exist. The control panel uses the same routes with its session cookie, sending the session's CSRF token as \`X-CSRF-Token\` on every request that changes something.

**Errors** are \`application/problem+json\` (RFC 9457) with a stable \`code\`; a 400 names each invalid field in \`errors\`.

**Lists** are paginated by cursor: pass the \`next_cursor\` of a page as \`?cursor=\` to get the next one; it is null on the last page.

**Idempotency.** Every POST, PATCH and DELETE accepts an \`Idempotency-Key\` header (1–255 visible ASCII characters, e.g. a UUID). The first response is kept for 24 hours and replayed for the same key with \`Idempotent-Replayed: true\`; the same key on a different request is a 422.

**Rate limits** apply per API key (or panel user), per minute, with a separate, higher limit for publishing events. Every response carries \`RateLimit-Limit\`, \`RateLimit-Remaining\` and \`RateLimit-Reset\`; a 429 carries \`Retry-After\`.`;

/**
 * The OpenAPI 3.1 document, generated from the route schemas that validate
 * requests and serialise responses, served at /openapi.json with a reference
 * at /docs (Swagger UI, every asset served by Herald). A copy is committed as
 * docs/openapi.json and a test fails when it is stale.
 */
export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Herald API', version, description: DESCRIPTION, license: { name: 'Apache-2.0', identifier: 'Apache-2.0' } },
      components: {
        securitySchemes: {
          apiKey: { type: 'http', scheme: 'bearer', description: 'An API key, hk_…; create one with `herald keys create` or POST /v1/api-keys.' },
          portalSession: {
            type: 'http',
            scheme: 'bearer',
            description: 'An embedded panel\u2019s session token, hps_\u2026, which the panel receives when its one-time link (POST /v1/portal-sessions) opens and keeps in memory.',
          },
          panelSession: {
            type: 'apiKey',
            in: 'cookie',
            name: 'herald_session',
            description:
              'The control panel\u2019s session cookie (`__Host-herald_session` behind TLS), set by POST /v1/session. Requests that change something must also send the session\u2019s `csrf_token` as `X-CSRF-Token`.',
          },
        },
      },
      security: [{ apiKey: [] }, { panelSession: [] }],
      tags: [
        { name: 'Endpoints', description: 'Addresses that receive events, their signing secrets and state.' },
        { name: 'Attempt log', description: 'The last 100 HTTP requests made to each endpoint.' },
        { name: 'Events', description: 'Publishing events, and what became of them.' },
        { name: 'Replays', description: 'Sending a selection of past events again, in the background, and the record of who did so.' },
        { name: 'Event types', description: 'The catalog of types an endpoint can subscribe to.' },
        { name: 'API keys', description: 'The account\u2019s credentials for this API.' },
        { name: 'Panel sign-in', description: 'Sessions of the control panel, and first-run setup.' },
        { name: 'Portal sessions', description: 'The control panel embedded in your own pages, for one account, through a one-time link.' },
        { name: 'Operations', description: 'For operators and load balancers.' },
      ],
    },
    // Shared schemas keep their names in components/schemas.
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
    transform: ({ schema: routeSchema, url, route }) => {
      if (!routeSchema) return { schema: routeSchema, url };
      // Any route refuses a path or query string that is not text, and any answers 503 while
      // Herald shuts down; any that may carry a body refuses one too large or not JSON.
      const general = { ...problems(400, 503), ...(MUTATING.has(String(route.method)) ? problems(413, 415) : {}) };
      const schema = { ...routeSchema, response: { ...general, ...(routeSchema.response as Record<string, unknown>) } };
      // Public routes (sign-in, setup) have no account to scope a key to.
      const isPublic = (route as { config?: { public?: boolean } }).config?.public === true;
      // An embedded panel's session can be refused any route outside its reach (`not_in_portal`).
      if (url.startsWith('/v1/') && !isPublic && !MUTATING.has(String(route.method))) {
        return { schema: { ...schema, response: { ...schema.response, ...problems(403) } } as typeof schema, url };
      }
      if (!MUTATING.has(String(route.method)) || !url.startsWith('/v1/') || isPublic) return { schema, url };
      // A panel session's change can be refused for a missing CSRF token, on every such route.
      const response = { ...schema.response, ...problems(403) };
      const headers = {
        type: 'object',
        properties: {
          'idempotency-key': {
            type: 'string',
            minLength: 1,
            maxLength: 255,
            description: 'Makes a retry of this request safe: the first response is replayed for 24 hours.',
          },
        },
      };
      return { schema: { ...schema, headers, response } as typeof schema, url };
    },
  });
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    theme: DOCS_THEME,
    // Everything from Herald itself; no validator badge fetched from swagger.io.
    staticCSP:
      "default-src 'self'; base-uri 'self'; font-src 'self' data:; frame-ancestors 'self'; img-src 'self' data:; object-src 'none'; script-src 'self'; script-src-attr 'none'; style-src 'self'",
    // BaseLayout: without Swagger UI's top bar and its logo; DOCS_THEME adds Herald's header.
    uiConfig: { layout: 'BaseLayout', docExpansion: 'list', deepLinking: true, defaultModelsExpandDepth: 0, validatorUrl: null },
  });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}

/**
 * The document as the server would serve it, without a database: the app is
 * built but never asked to handle a request. Used to write and check the
 * committed copy (docs/openapi.json).
 */
export async function openApiDocument(): Promise<unknown> {
  const { buildApp } = await import('./app.ts');
  const { createServiceDeps } = await import('../services/deps.ts');
  const { AddressPolicy } = await import('../core/address-policy.ts');
  const noDatabase = (): never => {
    throw new Error('the OpenAPI document is built without a database or a way to send');
  };
  const db = { engine: 'postgres', query: noDatabase, transaction: noDatabase, exec: noDatabase, listen: noDatabase, tryLockSession: noDatabase, close: async () => {} } as const;
  const deps = createServiceDeps({ db, encryptionKey: Buffer.alloc(32), clock: () => new Date(0), addresses: AddressPolicy.PUBLIC_ONLY });
  const outbound = { send: noDatabase };
  const app = await buildApp({ ...deps, outbound, disableAfter: 20, maxBodyBytes: 1, logLevel: 'silent' });
  try {
    await app.ready();
    return app.swagger();
  } finally {
    await app.close();
  }
}

/** The committed copy's text: stable key order as generated, two-space indent, final newline. */
export function openApiText(doc: unknown): string {
  return `${JSON.stringify(doc, null, 2)}\n`;
}
