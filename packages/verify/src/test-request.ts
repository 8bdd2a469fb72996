import type { EventData, WebhookEvent } from './events.ts';
import { CONTENT_TYPE, HEADER, USER_AGENT } from './scheme.ts';
import { sign } from './sign.ts';
import { toUnixSeconds } from './timestamp.ts';

export interface TestRequestInput<Type extends string> {
  /** The signing secret your handler verifies with. */
  secret: string;
  /** Event type, e.g. `alarm.created`; any string, to test how unknown types are ignored. */
  type: Type;
  /** The record: typed for the published event types. */
  data: EventData<Type>;
  /** Event id (`X-Service-Event-ID` and the envelope's `id`). Default: a random UUID. */
  id?: string;
  /** Signing time, as a `Date` or Unix seconds; also gives `created_at`. Default: now. */
  timestamp?: Date | number;
  /** `X-Service-Delivery-ID`. Default: a random UUID. */
  deliveryId?: string;
}

/**
 * A signed request exactly as Herald sends it. `{ method, headers, body }` is
 * a valid `RequestInit`, so `new Request(url, testRequest)` and
 * `fetch(url, testRequest)` work as they are.
 */
export interface TestRequest<Type extends string = string> {
  method: 'POST';
  /** Every header Herald sends, named as Herald names them. */
  headers: Record<string, string>;
  /** The envelope as Herald serialises it: compact `JSON.stringify`, keys in the order id, type, created_at, data. */
  body: string;
  /** The envelope as an object, for assertions. */
  event: WebhookEvent<Type, EventData<Type>>;
}

/**
 * Builds a complete signed webhook request, byte for byte the way Herald
 * sends one, so you can test your handler without a running Herald.
 *
 * @example
 * const req = await createTestRequest({
 *   secret: 'whsec_test',
 *   type: 'shipment.created',
 *   data: { id: 48213, reference: 'PO-2026-11-0042' },
 * });
 * const res = await app.fetch(new Request('http://localhost/webhooks/herald', req));
 * assert.equal(res.status, 204);
 */
export async function createTestRequest<Type extends string>(input: TestRequestInput<Type>): Promise<TestRequest<Type>> {
  const { secret, type, data } = input;
  if (typeof type !== 'string' || type === '') throw new TypeError('type must be an event type such as "alarm.created"');
  const timestamp = toUnixSeconds(input.timestamp, 'timestamp');
  const id = input.id ?? globalThis.crypto.randomUUID();
  const deliveryId = input.deliveryId ?? globalThis.crypto.randomUUID();
  const event: WebhookEvent<Type, EventData<Type>> = {
    id,
    type,
    created_at: new Date(timestamp * 1000).toISOString(),
    data,
  };
  const body = JSON.stringify(event);
  return {
    method: 'POST',
    headers: {
      [HEADER.contentType]: CONTENT_TYPE,
      [HEADER.userAgent]: USER_AGENT,
      [HEADER.event]: type,
      [HEADER.eventId]: id,
      [HEADER.deliveryId]: deliveryId,
      [HEADER.timestamp]: String(timestamp),
      [HEADER.signature]: await sign({ body, secret, timestamp }),
    },
    body,
    event,
  };
}
