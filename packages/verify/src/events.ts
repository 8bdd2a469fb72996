/**
 * Terminology
 * - event: something that happened (an alarm was raised); it has one `id`,
 *   kept across every retry, sent as `X-Service-Event-ID` and as `id` in the
 *   body.
 * - envelope: the JSON body, `{ id, type, created_at, data }`, the same for
 *   every event type.
 * - delivery: one event sent to one endpoint, with all its attempts; each
 *   attempt has its own `X-Service-Delivery-ID`, for diagnostics only.
 */

/**
 * The envelope of any event, as `verify` returns it. `type` is a plain string
 * because Herald may add event types at any time; narrow with
 * {@link isKnownEvent} to get typed `data`.
 */
export interface WebhookEvent<Type extends string = string, Data = unknown> {
  /** Event id (UUID); the same for every retry, so use it to skip duplicates. */
  id: string;
  /** Event type, e.g. `alarm.created`. */
  type: Type;
  /** When the event was created: ISO 8601 UTC with milliseconds, e.g. `2026-11-20T08:14:03.000Z`. */
  created_at: string;
  data: Data;
}

/**
 * The published event types.
 *
 * @example
 * if (event.type === EVENT_TYPE.alarmCreated) notifyOnCall(event);
 */
export const EVENT_TYPE = {
  alarmCreated: 'alarm.created',
  alarmResolved: 'alarm.resolved',
  shipmentCreated: 'shipment.created',
  shipmentCompleted: 'shipment.completed',
} as const;

export type KnownEventType = (typeof EVENT_TYPE)[keyof typeof EVENT_TYPE];

/**
 * An open enumeration: the values listed are the ones seen so far and get
 * autocompletion, but any other non-empty string may arrive; handle it.
 */
export type OpenEnum<Known extends string> = Known | (string & {});

/** The data of `alarm.created` and `alarm.resolved`. */
export interface Alarm {
  /** Alarm id (UUID). */
  id: string;
  /** Device that raised the alarm (UUID). */
  device_id: string;
  /** Related shipment, if any. */
  shipment_id: number | null;
  /** Kind of alarm. The full set is open. */
  type: OpenEnum<'temperature'>;
  /** Severity level. The full set is open. */
  severity: OpenEnum<'high'>;
  /** What raised the alarm. The full set is open. */
  source: OpenEnum<'sensor'>;
  /** Human-readable text. */
  message: string;
  /** `false` in `alarm.created`, `true` in `alarm.resolved`. */
  resolved: boolean;
  /** When the alarm was raised (ISO 8601 UTC). */
  created_at: string;
  /** When it was resolved (ISO 8601 UTC); `null` while unresolved. */
  resolved_at: string | null;
}

/** The data of `shipment.created` and `shipment.completed`: an id, other fields pass through as sent. */
export interface Shipment {
  id: number | string;
  [field: string]: unknown;
}

/** The data each published event type carries. */
export interface EventDataMap {
  'alarm.created': Alarm;
  'alarm.resolved': Alarm;
  'shipment.created': Shipment;
  'shipment.completed': Shipment;
}

/** `data` for an event type: the record for a published type, `unknown` for any other. */
export type EventData<Type extends string> = Type extends KnownEventType ? EventDataMap[Type] : unknown;

/** A published event: a union discriminated by `type`, so `switch (event.type)` narrows `data`. */
export type HeraldEvent = { [Type in KnownEventType]: WebhookEvent<Type, EventDataMap[Type]> }[KnownEventType];

const KNOWN_TYPES: ReadonlySet<string> = new Set(Object.values(EVENT_TYPE));

/**
 * True when the event is one of the published types, narrowing it to
 * {@link HeraldEvent}. Events of other types (new ones Herald added, or
 * `webhook.test` from the panel's "Send test event") stay `WebhookEvent` with
 * `unknown` data: acknowledge them with a 2xx and ignore them: new types may be added at any time.
 *
 * It checks the type name only: the data of a verified request is what Herald
 * validated against the event type's JSON Schema before sending.
 *
 * @example
 * const event = await verify({ body, headers, secret });
 * if (!isKnownEvent(event)) return new Response(null, { status: 204 });
 * switch (event.type) {
 *   case 'alarm.created':
 *     await raiseAlarm(event.data.device_id, event.data.severity);
 *     break;
 *   case 'shipment.completed':
 *     await closeShipment(event.data.id);
 *     break;
 * }
 */
export function isKnownEvent(event: WebhookEvent): event is HeraldEvent {
  return KNOWN_TYPES.has(event.type);
}
