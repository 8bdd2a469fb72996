import { DEFAULT_LIMITS } from '../config.ts';
import { HeraldError } from '../errors.ts';
import { countSubscribers } from '../storage/queries/endpoints.ts';
import type { NewEvent } from '../storage/queries/events.ts';
import type { ServiceDeps } from './deps.ts';

const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

/**
 * Refuses a publish that would make Herald create more deliveries in one
 * batch (HERALD_MAX_BATCH_DELIVERIES) or send more bytes (each event's body
 * times the endpoints subscribed to its type: HERALD_MAX_FANOUT_BYTES) than
 * the operator allows. Disabled endpoints count: their deliveries are kept,
 * to be recovered.
 *
 * The subscribers are counted only when the limits could be passed at all,
 * given that an account has at most HERALD_MAX_ENDPOINTS_PER_ACCOUNT
 * endpoints: the usual publish (one event of a few KiB) costs no query.
 */
export async function checkFanOut(deps: ServiceDeps, accountId: string, events: readonly NewEvent[], options: { batch: boolean }): Promise<void> {
  const limits = deps.limits ?? DEFAULT_LIMITS;
  const bodyBytes = events.reduce((sum, e) => sum + e.body.length, 0);
  const mayPassBytes = bodyBytes * limits.endpointsPerAccount > limits.fanOutBytes;
  const mayPassDeliveries = options.batch && events.length * limits.endpointsPerAccount > limits.batchDeliveries;
  if (!mayPassBytes && !mayPassDeliveries) return;

  const subscribers = await countSubscribers(deps.db, accountId, [...new Set(events.map((e) => e.type))]);
  let deliveries = 0;
  let bytes = 0;
  for (const e of events) {
    const n = subscribers.get(e.type) ?? 0;
    deliveries += n;
    bytes += n * e.body.length;
  }
  if (options.batch && deliveries > limits.batchDeliveries) {
    throw new HeraldError(
      'limit_exceeded',
      `this batch would create ${deliveries} deliveries (each event times the endpoints subscribed to its type), more than one batch may create (HERALD_MAX_BATCH_DELIVERIES = ${limits.batchDeliveries}); send fewer events per batch, or ask your operator to raise HERALD_MAX_BATCH_DELIVERIES`,
      { limit: { setting: 'HERALD_MAX_BATCH_DELIVERIES', value: limits.batchDeliveries } },
    );
  }
  if (bytes > limits.fanOutBytes) {
    throw new HeraldError(
      'limit_exceeded',
      `this publish would send ${mib(bytes)} (each event's body times the endpoints subscribed to its type), more than one publish may send (HERALD_MAX_FANOUT_BYTES = ${limits.fanOutBytes} bytes, ${mib(limits.fanOutBytes)}); send smaller events (a receiver can fetch large records by id), or ask your operator to raise HERALD_MAX_FANOUT_BYTES`,
      { limit: { setting: 'HERALD_MAX_FANOUT_BYTES', value: limits.fanOutBytes } },
    );
  }
}
