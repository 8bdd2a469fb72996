import type { FastifyInstance, FastifyReply } from 'fastify';
import type { PanelAuthConfig } from '../../config.ts';
import type { SetupToken } from '../../core/setup-token.ts';
import { HeraldError } from '../../errors.ts';
import type { ServiceDeps } from '../../services/deps.ts';
import { checkCredentials, csrfTokenFor, endSession, findSession, setupDone, setupFirstUser, setupNeeded, startSession } from '../../services/users.ts';
import type { UserRow } from '../../storage/queries/users.ts';
import { getAccount } from '../../storage/queries/accounts.ts';
import { clearSessionCookie, requestSession, sessionToken, setSessionCookie } from '../auth.ts';
import { LoginLimiter } from '../login-limiter.ts';
import { ok, problems } from '../schemas.ts';

const tags = ['Panel sign-in'];
const PUBLIC = { security: [] };
const SESSION_ONLY = { security: [{ panelSession: [] }] };

export interface SessionRouteDeps extends ServiceDeps {
  panelAuth: PanelAuthConfig;
  loginLimiter?: LoginLimiter;
  /** First-run setup's token; without one, setup through the API is refused. */
  setupToken?: SetupToken;
}

const password = { type: 'string', minLength: 1, maxLength: 1024, writeOnly: true } as const;

const OR_CREATE_USER = 'or create the first user with: herald users create --account <id> --email <email> --name <name>';

/** Refuses first-run setup unless it carries the token this process printed. */
function checkSetupToken(token: SetupToken | undefined, sent: string | undefined): void {
  if (sent === undefined || sent === '') {
    throw new HeraldError(
      'setup_token_required',
      `open the setup link Herald printed on its console when it started (…/setup#token=…), ${OR_CREATE_USER}`,
    );
  }
  if (!token?.matches(sent)) {
    throw new HeraldError(
      'setup_token_invalid',
      `this is not the setup link of this Herald process: use the link it printed at its last start (restarting prints a new one), ${OR_CREATE_USER}`,
    );
  }
}

/**
 * Panel sign-in: the session (sign in, who am I, sign out) and first-run
 * setup. These routes are public; each checks what it needs itself.
 */
export function sessionRoutes(app: FastifyInstance, deps: SessionRouteDeps): void {
  const limiter = deps.loginLimiter ?? new LoginLimiter();

  async function signedIn(reply: FastifyReply, user: Pick<UserRow, 'id' | 'email' | 'name' | 'account_id'>, accountName: string, status: number) {
    const now = deps.clock();
    const { token, expiresAt } = await startSession(deps.db, user.id, now, deps.panelAuth);
    setSessionCookie(reply, token, expiresAt, now, deps.panelAuth.cookieSecure);
    return reply
      .code(status)
      .header('cache-control', 'no-store')
      .send({
        user: { id: user.id, email: user.email, name: user.name },
        account: { id: user.account_id, name: accountName },
        csrf_token: csrfTokenFor(token),
        expires_at: expiresAt.toISOString(),
      });
  }

  app.get(
    '/v1/setup',
    {
      config: { public: true },
      schema: {
        ...PUBLIC,
        tags,
        operationId: 'getSetup',
        summary: 'Whether Herald still needs its first user',
        description: 'True until the first user exists. The panel then shows the first-run screen instead of sign-in.',
        response: {
          200: ok({ type: 'object', required: ['needed'], properties: { needed: { type: 'boolean' } } }, 'Whether first-run setup is needed.'),
          ...problems(429),
        },
      },
    },
    async () => {
      const needed = await setupNeeded(deps.db);
      // A user exists (made by setup, `herald users create` or another process): the printed link is dead for good.
      if (!needed) deps.setupToken?.spend();
      return { needed };
    },
  );

  app.post<{ Body: { account_name: string; name: string; email: string; password: string; setup_token?: string } }>(
    '/v1/setup',
    {
      config: { public: true },
      schema: {
        ...PUBLIC,
        tags,
        operationId: 'setup',
        summary: 'First run: create the account and its first user, and sign in',
        description:
          'Accepted once, while Herald has no user, and only with the setup token that Herald printed on its console when it started without a user (the link `…/setup#token=…`), so that no one else can claim a fresh Herald. Otherwise create users with `herald users create`.',
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['account_name', 'name', 'email', 'password'],
          properties: {
            account_name: { type: 'string', maxLength: 200, examples: ['Acme Logistics'] },
            name: { type: 'string', maxLength: 200, examples: ['Ada Lovelace'] },
            email: { type: 'string', maxLength: 320, examples: ['ada@acme.example'] },
            password: { ...password, description: 'At least 12 characters.' },
            setup_token: { type: 'string', maxLength: 200, writeOnly: true, description: 'The token of the setup link Herald printed at start (the part after `#token=`).' },
          },
        },
        response: { 201: ok('Session', 'Set up and signed in; the session cookie is set.'), ...problems(400, 403, 409, 413, 415, 429, 503) },
      },
    },
    async (req, reply) => {
      if (!(await setupNeeded(deps.db))) {
        deps.setupToken?.spend();
        throw setupDone();
      }
      checkSetupToken(deps.setupToken, req.body.setup_token);
      const { setup_token: _, ...input } = req.body;
      const user = await setupFirstUser(deps.db, deps.passwords, input);
      deps.setupToken?.spend();
      return signedIn(reply, user, input.account_name.trim(), 201);
    },
  );

  app.post<{ Body: { email: string; password: string } }>(
    '/v1/session',
    {
      config: { public: true },
      schema: {
        ...PUBLIC,
        tags,
        operationId: 'signIn',
        summary: 'Sign in to the panel',
        description:
          'Sets the session cookie (HttpOnly, SameSite=Lax, Secure behind TLS) and returns the CSRF token to send with every request that changes something. Repeated failures from one address are refused with 429 for a while, whatever the password; a try counts as a failure until its password proves right. 503 when Herald is checking too many passwords at once.',
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['email', 'password'],
          properties: { email: { type: 'string', maxLength: 320 }, password },
        },
        response: { 200: ok('Session', 'Signed in; the session cookie is set.'), ...problems(400, 401, 413, 415, 429, 503) },
      },
    },
    async (req, reply) => {
      const now = deps.clock().getTime();
      // Counted as a failure before the password is checked: sign-ins running at once cannot pass the limit.
      const reserved = limiter.reserve(req.ip, req.body.email, now);
      if ('wait' in reserved) {
        reply.header('retry-after', String(reserved.wait));
        throw new HeraldError('rate_limited', `too many failed sign-ins from this address; wait ${reserved.wait} s and try again, or ask your operator to reset the password (herald users set-password)`);
      }
      let user: UserRow;
      try {
        user = await checkCredentials(deps.db, deps.passwords, req.body.email, req.body.password);
      } catch (err) {
        // A wrong password counts as a failure; one never checked (Herald busy) does not.
        if (err instanceof HeraldError && err.code === 'invalid_credentials') limiter.failed(reserved.ticket);
        else limiter.refund(reserved.ticket);
        throw err;
      }
      limiter.succeeded(reserved.ticket);
      // A new sign-in replaces the session this browser had: no fixation.
      const previousToken = sessionToken(req);
      const previous = previousToken && (await findSession(deps.db, previousToken, deps.clock(), deps.panelAuth));
      if (previous) await endSession(deps.db, previous.session_id);
      const account = await getAccount(deps.db, user.account_id);
      return signedIn(reply, user, account?.name ?? '', 200);
    },
  );

  app.get(
    '/v1/session',
    {
      config: { public: true },
      schema: {
        ...SESSION_ONLY,
        tags,
        operationId: 'getSession',
        summary: 'The signed-in user, their account and the CSRF token',
        response: { 200: ok('Session', 'Signed in.'), ...problems(401, 429) },
      },
    },
    async (req, reply) => {
      const found = await requestSession(req, deps, deps.panelAuth);
      if (!found) {
        throw new HeraldError('unauthorized', sessionToken(req) ? 'your panel session has ended; sign in again' : 'not signed in; sign in with POST /v1/session');
      }
      const { session, token } = found;
      return reply.header('cache-control', 'no-store').send({
        user: { id: session.user_id, email: session.user_email, name: session.user_name },
        account: { id: session.account_id, name: session.account_name },
        csrf_token: csrfTokenFor(token),
        expires_at: session.expires_at.toISOString(),
      });
    },
  );

  app.delete(
    '/v1/session',
    {
      config: { public: true },
      schema: {
        ...SESSION_ONLY,
        tags,
        operationId: 'signOut',
        summary: 'Sign out of the panel',
        description: 'Ends the session at once, everywhere its cookie is, and clears the cookie. Without a live session it changes nothing and still answers 204.',
        response: { 204: { description: 'Signed out.', type: 'null' }, ...problems(403, 429) },
      },
    },
    async (req, reply) => {
      const found = await requestSession(req, deps, deps.panelAuth);
      if (found) await endSession(deps.db, found.session.session_id);
      clearSessionCookie(reply);
      return reply.code(204).send();
    },
  );
}
