import { HeraldError, type FieldError } from '../errors.ts';
import { requestHash, serialiseEnvelope } from '../core/envelope.ts';
import { databaseTime } from '../core/clock.ts';
import { isUuid } from '../core/ids.ts';
import { checkFanOut } from './fan-out-limits.ts';
import { eventKey, getEvents, insertEventsWithDeliveries, type EventRow, type NewEvent } from '../storage/queries/events.ts';
import type { Queryable } from '../storage/db.ts';
import type { ServiceDeps } from './deps.ts';

export interface EventInput {
  id?: unknown;
  type?: unknown;
  data?: unknown;
}

export interface PublishedEvent {
  id: string;
  type: string;
  created_at: string;
  /** True when this id was published before with the same body; nothing new was created. */
  duplicate: boolean;
}


interface Checked {
  id: string;
  type: string;
  data: unknown;
  hash: Buffer;
}

/** Validates every input before anything is written; errors name the field (`events[2].data.severity`). */
async function check(deps: ServiceDeps, inputs: EventInput[], prefix: (i: number) => string): Promise<Checked[]> {
  const names = [...new Set(inputs.map((e) => e.type).filter((t): t is string => typeof t === 'string'))];
  const types = await deps.catalog.types(names);
  const errors: FieldError[] = [];
  const checked: Checked[] = [];
  const now = deps.clock().getTime();
  inputs.forEach((input, i) => {
    const at = prefix(i);
    if (input.id !== undefined && !isUuid(input.id)) {
      errors.push({ field: `${at}id`, message: 'must be a UUID such as 0b7c1f5e-3a4d-4e2b-9c1a-8f6d2e7b5a90, or left out to let Herald choose one' });
    }
    const type = typeof input.type === 'string' ? types.get(input.type) : undefined;
    if (typeof input.type !== 'string' || input.type === '') {
      errors.push({ field: `${at}type`, message: 'is required, e.g. "alarm.created"' });
    } else if (!type) {
      errors.push({ field: `${at}type`, message: `"${input.type}" is not in the catalog; list it with GET /v1/event-types` });
    } else if (input.data === undefined) {
      errors.push({ field: `${at}data`, message: `is required: the ${type.name} record` });
    } else {
      errors.push(...deps.validator.check(type.schema, input.data, `${at}data`));
    }
    const id = typeof input.id === 'string' ? input.id.toLowerCase() : deps.ids.next(now);
    checked.push({ id, type: String(input.type), data: input.data, hash: requestHash(String(input.type), input.data) });
  });
  if (errors.length > 0) {
    const unknownType = errors.every((e) => e.field.endsWith('type') && e.message.includes('not in the catalog'));
    // invalid_event_data is about the record; a bad id or a missing type is a plain validation error.
    const badData = errors.some((e) => /(^|\.)data($|[.[])/.test(e.field));
    const detail = errors.map((e) => `${e.field}: ${e.message}`).join('; ');
    throw new HeraldError(unknownType ? 'unknown_event_type' : badData ? 'invalid_event_data' : 'validation_failed', detail, { errors });
  }
  return checked;
}

function toPublished(row: EventRow, duplicate: boolean): PublishedEvent {
  return { id: row.id, type: row.type, created_at: row.created_at.toISOString(), duplicate };
}

/**
 * Stores events and their deliveries, then returns. A single event shares a
 * statement with other publishes under load (services/publish-queue.ts); a
 * batch is one transaction of its own. The envelope is serialised here, once.
 * A producer-supplied id seen before returns the original event when the body
 * is the same (nothing is created) and a 409 when it differs. A batch is all
 * or nothing.
 */
export async function publishEvents(
  deps: ServiceDeps,
  accountId: string,
  inputs: EventInput[],
  options: { batch: boolean },
): Promise<PublishedEvent[]> {
  const checked = await check(deps, inputs, (i) => (options.batch ? `events[${i}].` : ''));
  const now = deps.clock();
  const createdAt = now.toISOString();
  const toRow = (e: Checked): NewEvent => ({
    accountId,
    id: e.id,
    type: e.type,
    createdAt: now,
    body: serialiseEnvelope({ id: e.id, type: e.type, created_at: createdAt, data: e.data }),
    requestHash: e.hash,
  });
  /** Each input's answer, given the ids this call inserted: new, a replay of an earlier publish, or a conflict. */
  const answer = async (db: Queryable, inserted: ReadonlySet<string>): Promise<PublishedEvent[]> => {
    const others = checked.filter((e) => !inserted.has(e.id)).map((e) => e.id);
    const existing = new Map(others.length ? (await getEvents(db, accountId, others)).map((r) => [r.id, r]) : []);
    const firstIndexOf = new Map<string, number>();
    checked.forEach((e, i) => firstIndexOf.has(e.id) || firstIndexOf.set(e.id, i));
    return checked.map((e, i) => {
      if (inserted.has(e.id)) {
        // The same id twice in one batch: the first is new, the second a replay of it.
        const firstIndex = firstIndexOf.get(e.id)!;
        if (firstIndex !== i && !checked[firstIndex]!.hash.equals(e.hash)) throw conflict(e.id, i, options.batch);
        return { id: e.id, type: e.type, created_at: createdAt, duplicate: firstIndex !== i };
      }
      const row = existing.get(e.id);
      if (!row) throw new Error(`event ${e.id} neither inserted nor found`);
      if (!row.request_hash.equals(e.hash)) throw conflict(e.id, i, options.batch);
      return toPublished(row, true);
    });
  };
  const rows = checked.map(toRow);
  await checkFanOut(deps, accountId, rows, options);
  if (checked.length === 1) {
    // One event: nothing to undo after the insert, so it can share a
    // statement and a commit with other publishes (group commit).
    const inserted = await deps.publishQueue.add(rows[0]!);
    return counted(deps, await answer(deps.db, new Set(inserted ? [checked[0]!.id] : [])));
  }
  // A batch is all or nothing, so a conflict found after the insert must undo
  // it: its own transaction. Results keep the input order.
  let pending = 0;
  const published = await deps.db.transaction(async (tx) => {
    const result = await insertEventsWithDeliveries(tx, rows, databaseTime(deps.clock));
    pending = result.pending;
    return answer(tx, new Set(checked.filter((e) => result.inserted.has(eventKey(accountId, e.id))).map((e) => e.id)));
  });
  // After commit, so a woken dispatcher finds the rows.
  if (pending > 0) deps.newWork.announce();
  return counted(deps, published);
}

/** Counts the events newly stored (herald_events_published_total): a replay stored nothing. */
function counted(deps: ServiceDeps, published: PublishedEvent[]): PublishedEvent[] {
  deps.metrics?.published(published.flatMap((e) => (e.duplicate ? [] : [e.type])));
  return published;
}

function conflict(id: string, index: number, batch: boolean): HeraldError {
  const at = batch ? `events[${index}].id` : 'id';
  return new HeraldError('event_id_conflict', `${at}: event ${id} was already published with a different type or data; use a new id for a new event`, {
    errors: [{ field: at, message: 'already used with a different body' }],
  });
}
