import { HeraldError, invalidField } from '../errors.ts';
import type { DeliveryRow } from '../storage/queries/deliveries.ts';
import { insertDelivery, lockDelivery, requeueDelivery } from '../storage/queries/deliveries.ts';
import { lockEndpoint } from '../storage/queries/endpoints.ts';
import { getEventForNewDelivery } from '../storage/queries/events.ts';
import type { ServiceDeps } from './deps.ts';
import { endpointNotFound } from './endpoints.ts';
import { databaseTime } from '../core/clock.ts';
import { isUuid } from '../core/ids.ts';


/**
 * Sends one event to one endpoint again, now. A finished delivery (succeeded,
 * failed or skipped) starts a fresh set of attempts; a pending one waiting for
 * a retry is brought forward; one being sent right now is left alone. An
 * endpoint that subscribes to the type but has no delivery of the event (it
 * was created later) gets one. The endpoint must be enabled and subscribe to
 * the event's type: a receiver gets only what it subscribed to.
 */
export async function redeliverEvent(deps: ServiceDeps, accountId: string, eventId: string, input: { endpoint_id?: unknown }): Promise<DeliveryRow> {
  const endpointId = input.endpoint_id;
  if (!isUuid(endpointId)) throw invalidField('endpoint_id', 'must be the id of one of your endpoints');
  const delivery = await deps.db.transaction(async (tx) => {
    const event = await getEventForNewDelivery(tx, accountId, eventId);
    if (!event) throw new HeraldError('not_found', `no event with id ${eventId} in this account`);
    const endpoint = await lockEndpoint(tx, accountId, endpointId);
    if (!endpoint) throw endpointNotFound(endpointId);
    if (!endpoint.enabled) throw new HeraldError('endpoint_disabled', 'the endpoint is disabled; re-enable it first (POST /v1/endpoints/{id}/enable), or send it a test event to check a fix');
    if (!endpoint.event_types.includes(event.type)) {
      throw new HeraldError('not_subscribed', `the endpoint does not subscribe to "${event.type}"; add the type to its event_types first`);
    }
    const existing = await lockDelivery(tx, { accountId, eventId, endpointId });
    if (!existing) return insertDelivery(tx, { accountId, eventId, endpointId, now: databaseTime(deps.clock) });
    // In flight (a worker is sending it): a second copy now would be a duplicate the receiver did not cause.
    if (existing.state === 'pending' && existing.in_flight) return existing;
    return requeueDelivery(tx, existing.id, databaseTime(deps.clock));
  });
  deps.newWork.announce();
  return delivery;
}
