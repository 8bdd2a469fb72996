import type { FastifyPluginAsync } from 'fastify';
import { isKnownEvent, MemoryIdempotencyStore, verify, WebhookVerificationError } from '@herald/verify';
import type { HeraldEvent, IdempotencyStore, WebhookEvent } from '@herald/verify';

export interface HeraldWebhookOptions {
  secret: string; // the endpoint's whole "whsec_..." secret
  onEvent: (event: HeraldEvent) => void | Promise<void>; // known types only, each event id once
  store?: IdempotencyStore; // default: in memory, one process; share one across instances
}

export function heraldPlugin({ secret, onEvent, store = new MemoryIdempotencyStore({ max: 10_000 }) }: HeraldWebhookOptions): FastifyPluginAsync {
  return async (app) => {
    // Inside this plugin only, application/json bodies stay raw bytes; the rest of the app parses JSON as usual.
    // 2 MiB: above the 1 MiB default, which an event can exceed by its envelope, and Herald never retries a 413.
    app.addContentTypeParser('application/json', { parseAs: 'buffer', bodyLimit: 2 * 1024 * 1024 }, (_req, body, done) => done(null, body));
    app.post('/webhooks/herald', async (req, reply) => {
      let event: WebhookEvent;
      try {
        event = await verify({ body: req.body as Buffer, headers: req.headers, secret });
      } catch (error) {
        if (!(error instanceof WebhookVerificationError)) throw error; // Fastify answers 500: Herald retries
        return reply.code(error.status).send(error.code); // 400: forged, replayed or wrong secret
      }
      if (isKnownEvent(event) && !(await store.seen(event.id))) {
        await onEvent(event);
        await store.remember(event.id);
      }
      return reply.code(204).send(); // also for duplicates and unknown event types
    });
  };
}
