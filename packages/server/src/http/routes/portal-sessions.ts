import type { FastifyInstance } from 'fastify';
import { HeraldError } from '../../errors.ts';
import {
  createPortalSession,
  endPortalSession,
  LINK_MINUTES,
  MAX_ALLOWED_ORIGINS,
  portalLinkJson,
  portalSessionJson,
  SESSION_MINUTES,
  type PortalSessionInput,
} from '../../services/portal-sessions.ts';
import { findLivePortalSessionById } from '../../storage/queries/portal-sessions.ts';
import type { RouteDeps } from '../app.ts';
import { ok, problems } from '../schemas.ts';

const tags = ['Portal sessions'];
const uuid = { type: 'string', format: 'uuid' } as const;

const theme = {
  type: 'object',
  required: ['accent_color', 'logo_url', 'hide_sign_out'],
  properties: {
    accent_color: { anyOf: [{ type: 'string' }, { type: 'null' }], examples: ['#0a7d55'] },
    logo_url: { anyOf: [{ type: 'string' }, { type: 'null' }] },
    hide_sign_out: { type: 'boolean' },
  },
} as const;

const portalLink = {
  type: 'object',
  required: ['id', 'account_id', 'url', 'expires_at', 'session_minutes', 'read_only', 'allowed_origins', 'theme'],
  properties: {
    id: uuid,
    account_id: uuid,
    url: { type: 'string', description: 'The one-time link: the `src` of the iframe. It opens once; it is in this response only.' },
    expires_at: { type: 'string', format: 'date-time', description: 'The link opens until then; the session it opens lasts `session_minutes` from opening.' },
    session_minutes: { type: 'integer' },
    read_only: { type: 'boolean' },
    allowed_origins: { type: 'array', items: { type: 'string' } },
    theme,
  },
} as const;

const portalSession = {
  type: 'object',
  required: ['id', 'account', 'read_only', 'theme', 'expires_at'],
  properties: {
    id: uuid,
    account: { type: 'object', required: ['id', 'name'], properties: { id: uuid, name: { type: 'string' } } },
    read_only: { type: 'boolean' },
    theme,
    expires_at: { type: 'string', format: 'date-time' },
  },
} as const;

const PORTAL_ONLY = { security: [{ portalSession: [] }] };

/**
 * Portal sessions: the platform's backend asks for a one-time link that opens
 * the panel, for one account, framed by its own pages; the embedded panel
 * reads and ends its own session.
 */
export function portalSessionRoutes(app: FastifyInstance, deps: RouteDeps): void {
  app.post<{ Body: PortalSessionInput & { account?: string } }>(
    '/v1/portal-sessions',
    {
      schema: {
        tags,
        operationId: 'createPortalSession',
        summary: 'Create a one-time link that opens the panel embedded in your page',
        description:
          'For the account of the API key. The link opens once, within `expires_in_minutes`, in an iframe of one of `allowed_origins` (the panel\u2019s `Content-Security-Policy: frame-ancestors` lists exactly these), signed in to that account alone; the session then lasts `session_minutes`. A `read_only` session can change nothing: the server refuses every change with `read_only_session`. Only an API key can ask (`api_key_required` for a panel or portal session).',
        security: [{ apiKey: [] }],
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['allowed_origins'],
          properties: {
            account: { ...uuid, description: 'The account to open the panel for; when given it must be the API key\u2019s own (`account_mismatch` otherwise).' },
            allowed_origins: {
              type: 'array',
              maxItems: MAX_ALLOWED_ORIGINS,
              items: { type: 'string', maxLength: 300 },
              description:
                'The origins of the pages that will frame the panel, each exactly `https://host[:port]`: no path, no trailing slash, no wildcard. Plain `http` only for localhost, 127.0.0.1 and [::1].',
              examples: [['https://app.example.com']],
            },
            read_only: { type: 'boolean', description: 'The panel shows, but changes nothing. Default false.' },
            expires_in_minutes: { type: 'integer', minimum: 1, maximum: LINK_MINUTES.max, description: `How long the link can be opened. Default ${LINK_MINUTES.default}.` },
            session_minutes: { type: 'integer', minimum: 1, maximum: SESSION_MINUTES.max, description: `How long the session lasts once opened. Default ${SESSION_MINUTES.default}.` },
            accent_color: { type: 'string', maxLength: 7, description: 'A hex colour, `#rgb` or `#rrggbb`, for buttons and links.', examples: ['#0a7d55'] },
            logo_url: { type: 'string', maxLength: 2000, description: 'An https URL of your logo, shown instead of Herald\u2019s.' },
            hide_sign_out: { type: 'boolean', description: 'Hide the Sign out button (your page ends the session by removing the frame). Default false.' },
          },
        },
        response: { 201: ok(portalLink, 'Created; the link is in this response only.'), ...problems(400, 401, 403, 404, 429) },
      },
    },
    async (req, reply) => {
      if (req.principal?.kind !== 'api_key') {
        throw new HeraldError('api_key_required', 'portal links are made by your backend with an API key of the account ("Authorization: Bearer hk_…"), never from a panel');
      }
      const { account, ...input } = req.body;
      if (account !== undefined && account !== req.accountId) {
        throw new HeraldError('account_mismatch', `the API key belongs to account ${req.accountId}, not ${account}; use a key of that account, or leave out "account"`);
      }
      const { token, row } = await createPortalSession(deps.db, req.accountId, input, deps.clock());
      const url = `${req.protocol}://${req.host}/portal/${token}`;
      return reply.code(201).header('cache-control', 'no-store').send(portalLinkJson(row, url));
    },
  );

  app.get(
    '/v1/portal-session',
    {
      schema: {
        ...PORTAL_ONLY,
        tags,
        operationId: 'getPortalSession',
        summary: 'The embedded panel\u2019s own session: its account, read-only or not, and theme',
        description: 'Answers the embedded panel, with its session token; any other credential gets `404 not_found`.',
        response: { 200: ok(portalSession, 'The session.'), ...problems(401, 403, 404, 429) },
      },
    },
    async (req, reply) => {
      if (req.principal?.kind !== 'portal') throw new HeraldError('not_found', 'no portal session: this route answers the embedded panel, with its session token');
      const row = await findLivePortalSessionById(deps.db, req.principal.portalSessionId, deps.clock());
      if (!row) throw new HeraldError('unauthorized', 'this embedded panel\u2019s session has ended; reopen the page that embeds it');
      return reply.header('cache-control', 'no-store').send(portalSessionJson(row));
    },
  );

  app.delete(
    '/v1/portal-session',
    {
      schema: {
        ...PORTAL_ONLY,
        tags,
        operationId: 'endPortalSession',
        summary: 'Sign the embedded panel out',
        description: 'Ends the session at once; its token is refused from then on. Allowed in a read-only session.',
        response: { 204: { description: 'Signed out.', type: 'null' }, ...problems(401, 403, 404, 429) },
      },
    },
    async (req, reply) => {
      if (req.principal?.kind !== 'portal') throw new HeraldError('not_found', 'no portal session: this route answers the embedded panel, with its session token');
      await endPortalSession(deps.db, req.principal.portalSessionId, deps.clock());
      return reply.code(204).send();
    },
  );
}
