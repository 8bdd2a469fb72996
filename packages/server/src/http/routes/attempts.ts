import type { FastifyInstance } from 'fastify';
import { HeraldError, invalidField } from '../../errors.ts';
import { getEndpoint } from '../../services/endpoints.ts';
import { getAttempt, listAttempts } from '../../storage/queries/attempts.ts';
import type { AttemptOutcome } from '../../storage/queries/record-results.ts';
import { attemptDetailJson, attemptJson } from '../representations.ts';
import { pageQueryProperties, parseTimePage, timePageOf } from '../pagination.ts';
import { ok, pageOfSchema, problems, ref } from '../schemas.ts';
import type { RouteDeps } from '../app.ts';

const OUTCOMES: readonly AttemptOutcome[] = ['succeeded', 'retrying', 'failed'];
const tags = ['Attempt log'];

/** `?outcome=retrying,failed` → the outcomes named; each must be known. */
function parseOutcomes(value: string | undefined): AttemptOutcome[] | undefined {
  if (value === undefined) return undefined;
  const names = value.split(',').map((s) => s.trim());
  const unknown = names.filter((n) => !OUTCOMES.includes(n as AttemptOutcome));
  if (unknown.length > 0 || names.length === 0) {
    throw invalidField('query.outcome', `must be a comma-separated list of ${OUTCOMES.join(', ')}; e.g. "retrying,failed" for failures only`);
  }
  return names as AttemptOutcome[];
}

export function attemptRoutes(app: FastifyInstance, deps: RouteDeps): void {
  app.get<{ Params: { id: string }; Querystring: { limit?: string; cursor?: string; outcome?: string } }>(
    '/v1/endpoints/:id/attempts',
    {
      schema: {
        tags,
        operationId: 'listAttempts',
        summary: 'List the attempt log of an endpoint',
        description: 'The last 100 attempts, newest first, tests included. Filter by outcome: `?outcome=retrying,failed` shows failures only.',
        params: { type: 'object', required: ['id'], properties: { id: { type: 'string', format: 'uuid' } } },
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            ...pageQueryProperties,
            outcome: { type: 'string', description: 'Comma-separated outcomes to keep: succeeded, retrying, failed.', examples: ['retrying,failed'] },
          },
        },
        response: { 200: ok(pageOfSchema('Attempt'), 'A page of attempts, newest first.'), ...problems(400, 401, 404, 429) },
      },
    },
    async (req) => {
      const page = parseTimePage(req.query);
      const outcomes = parseOutcomes(req.query.outcome);
      await getEndpoint(deps, req.accountId, req.params.id);
      const rows = await listAttempts(deps.db, { accountId: req.accountId, endpointId: req.params.id, outcomes, limit: page.limit + 1, before: page.before });
      const { items, next_cursor } = timePageOf(rows, page.limit, (r) => r.started_at);
      return { data: items.map(attemptJson), next_cursor };
    },
  );

  app.get<{ Params: { id: string; attempt_id: string } }>(
    '/v1/endpoints/:id/attempts/:attempt_id',
    {
      schema: {
        tags,
        operationId: 'getAttempt',
        summary: 'Get one attempt with the request sent',
        description: 'The headers as sent (signature included) and the body, with the first bytes of the response.',
        params: {
          type: 'object',
          required: ['id', 'attempt_id'],
          properties: { id: { type: 'string', format: 'uuid' }, attempt_id: { type: 'string', format: 'uuid', description: 'The X-Service-Delivery-ID of the attempt.' } },
        },
        response: { 200: ok('AttemptDetail', 'The attempt and the request sent.'), ...problems(400, 401, 404, 429) },
      },
    },
    async (req) => {
      const endpoint = await getEndpoint(deps, req.accountId, req.params.id);
      const row = await getAttempt(deps.db, { accountId: req.accountId, endpointId: endpoint.id, id: req.params.attempt_id });
      if (!row) throw new HeraldError('not_found', `no attempt with id ${req.params.attempt_id} in the log of endpoint ${endpoint.id}; the log keeps the last 100`);
      return attemptDetailJson(row, endpoint.url);
    },
  );
}
