import { isKnownEvent, MemoryIdempotencyStore, verify, WebhookVerificationError } from '@herald/verify';
import type { HeraldEvent, IdempotencyStore, WebhookEvent } from '@herald/verify';

export interface HeraldWebhookOptions {
  secret: string; // the endpoint's whole "whsec_..." secret
  onEvent: (event: HeraldEvent) => void | Promise<void>; // known types only, each event id once
  store?: IdempotencyStore; // default: in memory, one process; share one across instances
}

export function heraldRoute({ secret, onEvent, store = new MemoryIdempotencyStore({ max: 10_000 }) }: HeraldWebhookOptions) {
  async function POST(request: Request): Promise<Response> {
    let event: WebhookEvent;
    try {
      event = await verify({ body: await request.text(), headers: request.headers, secret });
    } catch (error) {
      if (!(error instanceof WebhookVerificationError)) throw error; // Next.js answers 500: Herald retries
      return new Response(error.code, { status: error.status }); // 400: forged, replayed or wrong secret
    }
    if (isKnownEvent(event) && !(await store.seen(event.id))) {
      await onEvent(event);
      await store.remember(event.id);
    }
    return new Response(null, { status: 204 }); // also for duplicates and unknown event types
  }
  return { POST };
}
