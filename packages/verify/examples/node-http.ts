import type { IncomingMessage, ServerResponse } from 'node:http';
import { isKnownEvent, MemoryIdempotencyStore, verify, WebhookVerificationError } from '@herald/verify';
import type { HeraldEvent, IdempotencyStore, WebhookEvent } from '@herald/verify';

export interface HeraldWebhookOptions {
  secret: string; // the endpoint's whole "whsec_..." secret
  onEvent: (event: HeraldEvent) => void | Promise<void>; // known types only, each event id once
  store?: IdempotencyStore; // default: in memory, one process; share one across instances
}

export function heraldListener({ secret, onEvent, store = new MemoryIdempotencyStore({ max: 10_000 }) }: HeraldWebhookOptions) {
  async function handle(req: IncomingMessage): Promise<[status: number, body?: string]> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk);
    let event: WebhookEvent;
    try {
      event = await verify({ body: Buffer.concat(chunks), headers: req.headers, secret });
    } catch (error) {
      if (!(error instanceof WebhookVerificationError)) throw error;
      return [error.status, error.code]; // 400: forged, replayed or wrong secret
    }
    if (isKnownEvent(event) && !(await store.seen(event.id))) {
      await onEvent(event);
      await store.remember(event.id);
    }
    return [204]; // also for duplicates and unknown event types
  }
  return (req: IncomingMessage, res: ServerResponse): void => {
    handle(req).then(
      ([status, body]) => res.writeHead(status).end(body),
      (error: unknown) => {
        console.error(error);
        res.writeHead(500).end(); // Herald retries
      },
    );
  };
}
