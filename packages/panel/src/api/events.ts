import { request } from './client.ts';
import type { Attempt, Page } from './types.ts';

/** The API of events, their search and replays, as the Events pages use it. */

export type DeliveryState = 'pending' | 'succeeded' | 'failed' | 'skipped';

export interface HeraldEvent {
  id: string;
  type: string;
  created_at: string;
  payload: unknown;
}

export interface Delivery {
  id: string;
  event_id: string;
  endpoint_id: string;
  state: DeliveryState;
  attempts: number;
  next_attempt_at: string | null;
  last_status: number | null;
  last_error: string | null;
  created_at: string;
  updated_at: string;
}

export interface EventDetail extends HeraldEvent {
  deliveries: Array<Delivery & { attempt_log: Attempt[] }>;
}

/** A search, as the Events page keeps it in its address. */
export interface EventSearch {
  id?: string;
  type?: string;
  since?: string;
  until?: string;
  endpoint_id?: string;
  state?: DeliveryState;
}

export interface Replay {
  id: string;
  state: 'running' | 'completed' | 'canceled';
  filter: { ids?: string[]; types?: string[]; since?: string; until?: string; endpoint_id?: string; states?: DeliveryState[] };
  endpoint_id: string | null;
  total: number;
  done: number;
  deliveries: number;
  skipped: { disabled: number; unsubscribed: number };
  created_by: { type: 'api_key' | 'user'; id: string | null; name: string | null };
  created_at: string;
  updated_at: string;
  finished_at: string | null;
}

export interface ReplayPreview {
  dry_run: true;
  count: number;
  endpoint_id: string | null;
  endpoints: number;
}

/** What a replay sends: the events a search selects, or some chosen ones. */
export type ReplaySelection = { kind: 'search'; search: EventSearch } | { kind: 'ids'; ids: string[] };

const enc = encodeURIComponent;

function query(search: EventSearch, extra: Record<string, string | undefined> = {}): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries({ ...search, ...extra })) if (v) q.set(k === 'endpoint_id' ? 'endpoint_id' : k, v);
  const s = q.toString();
  return s ? `?${s}` : '';
}

export const searchEvents = (search: EventSearch, cursor: string | null, signal?: AbortSignal) =>
  request<Page<HeraldEvent>>('GET', `/v1/events${query(search, { limit: '50', cursor: cursor ?? undefined })}`, { signal });

export const countEvents = (search: EventSearch, signal?: AbortSignal) =>
  request<{ count: number; capped: boolean }>('GET', `/v1/events/count${query(search)}`, { signal });

export const getEvent = (id: string, signal?: AbortSignal) => request<EventDetail>('GET', `/v1/events/${enc(id)}`, { signal });

export const resendEvent = (id: string, endpointId: string) =>
  request<Delivery>('POST', `/v1/events/${enc(id)}/redeliver`, { body: { endpoint_id: endpointId } });

function replayBody(selection: ReplaySelection, endpointId: string | null) {
  const s = selection.kind === 'search' ? selection.search : undefined;
  return {
    ...(selection.kind === 'ids'
      ? { event_ids: selection.ids }
      : {
          filter: {
            ...(s!.type ? { types: [s!.type] } : {}),
            ...(s!.since ? { since: s!.since } : {}),
            ...(s!.until ? { until: s!.until } : {}),
            ...(s!.endpoint_id ? { endpoint_id: s!.endpoint_id } : {}),
            ...(s!.state ? { states: [s!.state] } : {}),
          },
        }),
    ...(endpointId ? { endpoint_id: endpointId } : {}),
  };
}

/** A search by id is a list of one: replayed as such. */
export function selectionOf(search: EventSearch): ReplaySelection {
  return search.id ? { kind: 'ids', ids: [search.id] } : { kind: 'search', search };
}

export const previewReplay = (selection: ReplaySelection, endpointId: string | null) =>
  request<ReplayPreview>('POST', '/v1/replays', { body: { ...replayBody(selection, endpointId), dry_run: true } });

/** `key`: the Idempotency-Key, one per confirmation, so a retried request creates one replay. */
export const createReplay = (selection: ReplaySelection, endpointId: string | null, key: string) =>
  request<Replay>('POST', '/v1/replays', { body: replayBody(selection, endpointId), headers: { 'idempotency-key': key } });

export const listReplays = (signal?: AbortSignal) => request<Page<Replay>>('GET', '/v1/replays?limit=50', { signal });

export const cancelReplay = (id: string) => request<Replay>('POST', `/v1/replays/${enc(id)}/cancel`);
