import type { FastifyInstance } from 'fastify';
import { listEventTypes } from '../../storage/queries/event-types.ts';
import { eventTypeJson } from '../representations.ts';
import type { RouteDeps } from '../app.ts';

export function eventTypeRoutes(app: FastifyInstance, deps: RouteDeps): void {
  app.get('/v1/event-types', async () => ({ data: (await listEventTypes(deps.db)).map(eventTypeJson) }));
}
