import type { FastifyInstance } from 'fastify';
import { createAccountApiKey, revokeAccountApiKey } from '../../services/accounts.ts';
import { listApiKeys } from '../../storage/queries/api-keys.ts';
import { apiKeyJson } from '../representations.ts';
import { pageOf, pageQuerySchema, parsePage, staleCursor } from '../pagination.ts';
import { bodyOptional, ok, pageOfSchema, problems, ref } from '../schemas.ts';
import type { RouteDeps } from '../app.ts';

const tags = ['API keys'];

export function apiKeyRoutes(app: FastifyInstance, deps: RouteDeps): void {
  app.get<{ Querystring: { limit?: string; cursor?: string } }>(
    '/v1/api-keys',
    {
      schema: {
        tags,
        operationId: 'listApiKeys',
        summary: 'List the account\u2019s API keys',
        description: 'Oldest first, revoked keys included. Only the visible prefix of each key is shown; the key itself was shown once.',
        querystring: pageQuerySchema,
        response: { 200: ok(pageOfSchema('ApiKey'), 'A page of keys, oldest first.'), ...problems(400, 401, 429) },
      },
    },
    async (req) => {
      const page = parsePage(req.query);
      const rows = await listApiKeys(deps.db, req.accountId, { limit: page.limit + 1, after: page.after });
      if (!rows) throw staleCursor();
      const { items, next_cursor } = pageOf(rows, page.limit);
      return { data: items.map(apiKeyJson), next_cursor };
    },
  );

  app.post<{ Body: { name?: string } | undefined }>(
    '/v1/api-keys',
    {
      preValidation: bodyOptional,
      schema: {
        tags,
        operationId: 'createApiKey',
        summary: 'Create an API key',
        description: 'The response carries the key: it is shown this once. Only its hash is stored.',
        body: { type: 'object', additionalProperties: false, properties: { name: { type: 'string', maxLength: 100, examples: ['billing service'] } } },
        response: { 201: ok('ApiKeyWithKey', 'Created; the key is in this response only.'), ...problems(400, 401, 409, 413, 415, 422, 429) },
      },
    },
    async (req, reply) => {
      const { key, row } = await createAccountApiKey(deps.db, req.accountId, req.body?.name);
      return reply.code(201).header('cache-control', 'no-store').send({ ...apiKeyJson(row), key });
    },
  );

  app.delete<{ Params: { id: string } }>(
    '/v1/api-keys/:id',
    {
      schema: {
        tags,
        operationId: 'revokeApiKey',
        summary: 'Revoke an API key',
        description: 'From the next request on, the key gets 401. Revoking the key that makes this request is allowed.',
        params: { type: 'object', required: ['id'], properties: { id: { type: 'string', format: 'uuid' } } },
        response: { 200: ok('ApiKey', 'Revoked (revoking again changes nothing).'), ...problems(400, 401, 404, 409, 413, 415, 422, 429) },
      },
    },
    async (req) => apiKeyJson(await revokeAccountApiKey(deps, req.accountId, req.params.id)),
  );
}
