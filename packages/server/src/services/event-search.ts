import { invalidField } from '../errors.ts';
import { isUuid } from '../core/ids.ts';
import { parseTime } from './endpoint-state.ts';
import type { DeliveryState } from '../storage/queries/deliveries.ts';
import type { EventFilter } from '../storage/queries/event-search.ts';

export const DELIVERY_STATES: readonly DeliveryState[] = ['pending', 'succeeded', 'failed', 'skipped'];

/** Counts stop here: beyond it, the answer is "more than 10,000", so that a count costs at most this many rows. */
export const COUNT_CAP = 10_000;

/** Most event ids one search or replay may name. */
export const MAX_EVENT_IDS = 1_000;

/** A filter as the API takes it: the query string's comma-separated lists, or a JSON body's arrays. */
export interface EventFilterInput {
  ids?: unknown;
  types?: unknown;
  since?: unknown;
  until?: unknown;
  endpoint_id?: unknown;
  states?: unknown;
}

function list(field: string, value: unknown, example: string): string[] | undefined {
  if (value === undefined) return undefined;
  const items = typeof value === 'string' ? value.split(',').map((s) => s.trim()) : Array.isArray(value) ? value : undefined;
  if (!items || items.length === 0 || items.some((s) => typeof s !== 'string' || s === '')) {
    throw invalidField(field, `must be a non-empty list, e.g. ${example}`);
  }
  return [...new Set(items as string[])];
}

/**
 * Checks a search's filter; `names` says what each field is called where it
 * came from (query.type, filter.types…), for the error to name it.
 */
export function parseEventFilter(input: EventFilterInput, names: Record<keyof EventFilterInput, string>): EventFilter {
  const filter: EventFilter = {};
  const ids = list(names.ids, input.ids, '0196f1d2-…');
  if (ids) {
    if (ids.length > MAX_EVENT_IDS) throw invalidField(names.ids, `names ${ids.length} events; at most ${MAX_EVENT_IDS} at once (select the rest with a filter instead)`);
    const bad = ids.find((id) => !isUuid(id));
    if (bad !== undefined) throw invalidField(names.ids, `"${String(bad).slice(0, 60)}" is not an event id (a UUID)`);
    filter.ids = ids.map((id) => id.toLowerCase());
  }
  const types = list(names.types, input.types, 'alarm.created,alarm.resolved');
  if (types) filter.types = types;
  if (input.since !== undefined) filter.since = parseTime(names.since, input.since);
  if (input.until !== undefined) filter.until = parseTime(names.until, input.until);
  if (filter.since && filter.until && filter.since.getTime() >= filter.until.getTime()) {
    throw invalidField(names.until, 'must be after since (the range is since, inclusive, to until, exclusive)');
  }
  if (input.endpoint_id !== undefined) {
    if (!isUuid(input.endpoint_id)) throw invalidField(names.endpoint_id, 'must be the id of one of your endpoints');
    filter.endpointId = input.endpoint_id.toLowerCase();
  }
  const states = list(names.states, input.states, 'failed,skipped');
  if (states) {
    const bad = states.find((s) => !DELIVERY_STATES.includes(s as DeliveryState));
    if (bad !== undefined) throw invalidField(names.states, `"${bad.slice(0, 60)}" is not a delivery state; use ${DELIVERY_STATES.join(', ')}`);
    filter.states = states as DeliveryState[];
  }
  return filter;
}

/** The filter as a replay stores and shows it. */
export function filterJson(f: EventFilter): Record<string, unknown> {
  return {
    ...(f.ids ? { ids: f.ids } : {}),
    ...(f.types ? { types: f.types } : {}),
    ...(f.since ? { since: f.since.toISOString() } : {}),
    ...(f.until ? { until: f.until.toISOString() } : {}),
    ...(f.endpointId ? { endpoint_id: f.endpointId } : {}),
    ...(f.states ? { states: f.states } : {}),
  };
}

/** A stored filter back as a filter (it was checked when stored). */
export function filterOfJson(json: Record<string, unknown>): EventFilter {
  return {
    ...(Array.isArray(json.ids) ? { ids: json.ids as string[] } : {}),
    ...(Array.isArray(json.types) ? { types: json.types as string[] } : {}),
    ...(typeof json.since === 'string' ? { since: new Date(json.since) } : {}),
    ...(typeof json.until === 'string' ? { until: new Date(json.until) } : {}),
    ...(typeof json.endpoint_id === 'string' ? { endpointId: json.endpoint_id } : {}),
    ...(Array.isArray(json.states) ? { states: json.states as DeliveryState[] } : {}),
  };
}
