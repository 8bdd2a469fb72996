import { DEFAULT_LIMITS } from '../config.ts';
import { databaseTime } from '../core/clock.ts';
import { isUuid } from '../core/ids.ts';
import { HeraldError, invalidField } from '../errors.ts';
import { getEndpoint } from '../storage/queries/endpoints.ts';
import { countEvents, nextEventsOf, type EventFilter } from '../storage/queries/event-search.ts';
import {
  advanceReplay,
  countReplayTargets,
  countRunningReplays,
  finishReplay,
  getReplay,
  insertReplay,
  insertReplayDeliveries,
  lockNextRunningReplay,
  type ReplayRow,
} from '../storage/queries/replays.ts';
import type { ServiceDeps } from './deps.ts';
import { endpointNotFound } from './endpoints.ts';
import { filterJson, filterOfJson, parseEventFilter, type EventFilterInput } from './event-search.ts';

/** Replays one account may have running at once; more wait for one to finish. */
export const MAX_RUNNING_REPLAYS = 3;

/** Events per batch at most: each batch is one short transaction. */
export const MAX_REPLAY_BATCH = 500;

export interface ReplayInput {
  filter?: EventFilterInput;
  event_ids?: unknown;
  endpoint_id?: unknown;
  dry_run?: unknown;
}

/** Who asked for a replay: an API key, or a person signed in to the panel. */
export type ReplayCreator = { kind: 'api_key'; keyId: string } | { kind: 'session'; userId: string };

export interface ReplayPreview {
  dry_run: true;
  /** Events the replay would send again. */
  count: number;
  endpoint_id: string | null;
  /** Enabled endpoints it would send to (for one endpoint: 1). */
  endpoints: number;
}

const FILTER_NAMES = {
  ids: 'event_ids',
  types: 'filter.types',
  since: 'filter.since',
  until: 'filter.until',
  endpoint_id: 'filter.endpoint_id',
  states: 'filter.states',
} as const;

/**
 * Checks a replay request and counts what it selects; with dry_run, that
 * count is the answer. Otherwise the replay is stored, running, and the
 * maintainer sends it in batches (`runReplays`). Its time range ends when
 * it is created: events published afterwards are not part of it.
 */
export async function createReplay(deps: ServiceDeps, accountId: string, creator: ReplayCreator, input: ReplayInput): Promise<ReplayPreview | ReplayRow> {
  const limits = deps.limits ?? DEFAULT_LIMITS;
  if ((input.filter === undefined) === (input.event_ids === undefined)) {
    throw new HeraldError('validation_failed', 'give either filter (the events a search selects) or event_ids (a list), not both and not neither', {
      errors: [{ field: 'filter', message: 'give filter or event_ids' }],
    });
  }
  const filter: EventFilter = parseEventFilter({ ...(input.filter ?? {}), ids: input.event_ids }, FILTER_NAMES);
  let endpointId: string | null = null;
  if (input.endpoint_id !== undefined && input.endpoint_id !== null) {
    if (!isUuid(input.endpoint_id)) throw invalidField('endpoint_id', 'must be the id of one of your endpoints, or left out to send to every endpoint subscribed to each event\u2019s type');
    endpointId = input.endpoint_id.toLowerCase();
    const endpoint = await getEndpoint(deps.db, accountId, endpointId);
    if (!endpoint) throw endpointNotFound(endpointId);
    if (!endpoint.enabled) {
      throw new HeraldError('endpoint_disabled', 'the endpoint is disabled and a replay sends nothing to a disabled endpoint; re-enable it first (POST /v1/endpoints/{id}/enable)');
    }
  }
  const now = deps.clock();
  // Closed now: a replay is of what happened up to the moment it was asked
  // for, this millisecond included (until is exclusive).
  const end = new Date(now.getTime() + 1);
  if (!filter.until || filter.until.getTime() > end.getTime()) filter.until = end;
  const count = await countEvents(deps.db, { accountId, filter, cap: limits.replayEvents });
  if (count > limits.replayEvents) {
    throw new HeraldError(
      'limit_exceeded',
      `the selection holds more than ${limits.replayEvents} events, more than one replay may send (HERALD_MAX_REPLAY_EVENTS); narrow it (a shorter time range, fewer types), or replay it in parts`,
      { limit: { setting: 'HERALD_MAX_REPLAY_EVENTS', value: limits.replayEvents } },
    );
  }
  if (input.dry_run === true) {
    return { dry_run: true, count, endpoint_id: endpointId, endpoints: await countReplayTargets(deps.db, accountId, endpointId) };
  }
  if (count === 0) throw new HeraldError('nothing_to_replay', 'no event matches the selection; check it with GET /v1/events and the same filter');
  if ((await countRunningReplays(deps.db, accountId)) >= MAX_RUNNING_REPLAYS) {
    throw new HeraldError('replay_limit', `this account already has ${MAX_RUNNING_REPLAYS} replays running; wait for one to finish, or cancel one (POST /v1/replays/{id}/cancel)`);
  }
  const id = deps.ids.next(now.getTime());
  await insertReplay(deps.db, {
    id,
    accountId,
    filter: filterJson(filter),
    endpointId,
    total: count,
    createdByKeyId: creator.kind === 'api_key' ? creator.keyId : null,
    createdByUserId: creator.kind === 'session' ? creator.userId : null,
    now,
  });
  return (await getReplay(deps.db, accountId, id))!;
}

export async function cancelReplay(deps: ServiceDeps, accountId: string, id: string): Promise<ReplayRow> {
  const replay = await getReplay(deps.db, accountId, id);
  if (!replay) throw replayNotFound(id);
  if (!(await finishReplay(deps.db, { accountId, id, state: 'canceled', now: deps.clock() }))) {
    throw new HeraldError('conflict', `the replay has ${replay.state === 'completed' ? 'completed' : 'been canceled'} already; nothing to cancel`);
  }
  return (await getReplay(deps.db, accountId, id))!;
}

export function replayNotFound(id: string): HeraldError {
  return new HeraldError('not_found', `no replay with id ${id} in this account`);
}

/**
 * Takes running replays a batch at a time, in turns, each batch one short
 * transaction that locks the replay (SKIP LOCKED: never two processes on one),
 * creates the batch's deliveries and records how far it got. A process that
 * stops between batches loses nothing: the next one to run this starts from
 * the stored position. Returns the batches run.
 */
export async function runReplays(deps: ServiceDeps, options: { maxBatches: number }): Promise<number> {
  const limits = deps.limits ?? DEFAULT_LIMITS;
  let batches = 0;
  while (batches < options.maxBatches) {
    const step = await deps.db.transaction(async (tx) => {
      const replay = await lockNextRunningReplay(tx);
      if (!replay) return undefined;
      const now = deps.clock();
      // Within the deliveries one transaction may create (HERALD_MAX_BATCH_DELIVERIES).
      const targets = await countReplayTargets(tx, replay.account_id, replay.endpoint_id);
      const size = Math.max(1, Math.min(MAX_REPLAY_BATCH, Math.floor(limits.batchDeliveries / Math.max(1, targets))));
      const after = replay.after_created_at && replay.after_id ? { at: replay.after_created_at, id: replay.after_id } : undefined;
      const events = await nextEventsOf(tx, { accountId: replay.account_id, filter: filterOfJson(replay.filter), after, limit: size });
      if (events.length === 0) {
        await finishReplay(tx, { accountId: replay.account_id, id: replay.id, state: 'completed', now });
        return { created: 0 };
      }
      const result = await insertReplayDeliveries(tx, {
        accountId: replay.account_id,
        eventIds: events.map((e) => e.id),
        endpointId: replay.endpoint_id,
        now: databaseTime(deps.clock),
      });
      const last = events[events.length - 1]!;
      await advanceReplay(tx, {
        id: replay.id,
        after: { at: last.created_at, id: last.id },
        events: events.length,
        deliveries: result.created,
        skippedDisabled: result.skippedDisabled,
        skippedUnsubscribed: result.skippedUnsubscribed,
        now,
      });
      // The last batch ends it at once, rather than at the next turn.
      if (events.length < size) await finishReplay(tx, { accountId: replay.account_id, id: replay.id, state: 'completed', now });
      return result;
    });
    if (!step) break;
    batches += 1;
    // After commit, so that a woken dispatcher finds the rows.
    if (step.created > 0) deps.newWork.announce();
  }
  return batches;
}
