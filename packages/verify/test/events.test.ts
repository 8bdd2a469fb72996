import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EVENT_TYPE, isKnownEvent, type HeraldEvent, type KnownEventType, type WebhookEvent } from '../src/index.ts';

const event = (type: string): WebhookEvent => ({ id: 'e1', type, created_at: '2026-01-01T00:00:00.000Z', data: {} });

test('the four published types are known', () => {
  assert.deepEqual(Object.values(EVENT_TYPE).sort(), ['alarm.created', 'alarm.resolved', 'shipment.completed', 'shipment.created']);
  for (const type of Object.values(EVENT_TYPE)) assert.equal(isKnownEvent(event(type)), true, type);
});

test('other types, including the panel\'s webhook.test, are let through as unknown, not rejected', () => {
  for (const type of ['webhook.test', 'device.created', 'alarm', 'ALARM.CREATED', 'alarm.created ', '__proto__', 'constructor']) {
    assert.equal(isKnownEvent(event(type)), false, type);
  }
});

/** Compiled, never run: the narrowing a receiver relies on. */
export function typeLevelChecks(e: WebhookEvent): string | number | undefined {
  // @ts-expect-error data is unknown until narrowed
  void e.data.id;
  if (!isKnownEvent(e)) return undefined;
  const known: HeraldEvent = e;
  const type: KnownEventType = known.type;
  void type;
  switch (e.type) {
    case 'alarm.created':
    case 'alarm.resolved': {
      const shipment: number | null = e.data.shipment_id;
      const resolvedAt: string | null = e.data.resolved_at;
      // Open enumerations accept any string.
      const severity: string = e.data.severity;
      void [shipment, resolvedAt, severity];
      return e.data.device_id;
    }
    case 'shipment.created':
    case 'shipment.completed': {
      const extra: unknown = e.data.reference;
      void extra;
      return e.data.id;
    }
    default: {
      const exhaustive: never = e;
      return exhaustive;
    }
  }
}
