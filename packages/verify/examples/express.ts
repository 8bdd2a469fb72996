import express, { type Router } from 'express';
import { isKnownEvent, MemoryIdempotencyStore, verify, WebhookVerificationError } from '@herald/verify';
import type { HeraldEvent, IdempotencyStore, WebhookEvent } from '@herald/verify';

export interface HeraldWebhookOptions {
  secret: string; // the endpoint's whole "whsec_..." secret
  onEvent: (event: HeraldEvent) => void | Promise<void>; // known types only, each event id once
  store?: IdempotencyStore; // default: in memory, one process; share one across instances
}

export function heraldRouter({ secret, onEvent, store = new MemoryIdempotencyStore({ max: 10_000 }) }: HeraldWebhookOptions): Router {
  const router = express.Router();
  // express.raw on this route only. 2mb: the default 100kb is less than an event may be, and Herald never retries a 413.
  router.post('/webhooks/herald', express.raw({ type: 'application/json', limit: '2mb' }), async (req, res) => {
    let event: WebhookEvent;
    try {
      event = await verify({ body: req.body, headers: req.headers, secret });
    } catch (error) {
      if (!(error instanceof WebhookVerificationError)) throw error; // Express 5 answers 500: Herald retries
      res.status(error.status).send(error.code); // 400: forged, replayed or wrong secret
      return;
    }
    if (isKnownEvent(event) && !(await store.seen(event.id))) {
      await onEvent(event);
      await store.remember(event.id);
    }
    res.sendStatus(204); // also for duplicates and unknown event types
  });
  return router;
}
