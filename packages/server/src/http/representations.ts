import type { EndpointRow } from '../storage/queries/endpoints.ts';
import type { EventTypeRow } from '../storage/queries/event-types.ts';

/** The public form of an endpoint. The signing secret never appears here, only its hint. */
export function endpointJson(e: EndpointRow, disableAfter: number) {
  return {
    id: e.id,
    url: e.url,
    description: e.description,
    event_types: e.event_types,
    state: e.enabled ? 'enabled' : 'disabled',
    disabled_reason: e.disabled_reason,
    disabled_at: e.disabled_at?.toISOString() ?? null,
    failure_streak: e.failure_streak,
    failure_threshold: disableAfter,
    secret_hint: e.secret_hint,
    created_at: e.created_at.toISOString(),
    updated_at: e.updated_at.toISOString(),
  };
}

export function eventTypeJson(t: EventTypeRow) {
  return { name: t.name, description: t.description, builtin: t.builtin, schema: t.schema, example: t.example };
}
