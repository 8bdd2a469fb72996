import { randomUUID } from 'node:crypto';

/**
 * A logistics workload: alarms raised and resolved, shipments created and
 * completed, in the proportions a fleet of sensors produces (most traffic is
 * alarms; every raised alarm is later resolved).
 */
export function* logisticsEvents(): Generator<{ type: string; data: Record<string, unknown> }> {
  let shipment = 40_000;
  const open: Array<Record<string, unknown>> = [];
  const kinds = ['temperature', 'humidity', 'shock', 'door_open', 'geofence'];
  const severities = ['low', 'medium', 'high', 'critical'];
  for (let i = 0; ; i++) {
    const roll = i % 10;
    const at = new Date().toISOString();
    if (roll < 2) {
      shipment += 1;
      yield { type: 'shipment.created', data: { id: shipment, reference: `PO-${shipment}`, origin: 'Rotterdam', destination: 'Lyon', pallets: 12 } };
    } else if (roll === 2) {
      yield { type: 'shipment.completed', data: { id: shipment - 5, reference: `PO-${shipment - 5}`, completed_at: at } };
    } else if (roll < 7 || open.length === 0) {
      const alarm = {
        id: randomUUID(),
        device_id: randomUUID(),
        shipment_id: i % 17 === 0 ? null : shipment,
        type: kinds[i % kinds.length],
        severity: severities[i % severities.length],
        source: 'sensor',
        message: `Reading out of range on device ${i % 500}`,
        resolved: false,
        created_at: at,
        resolved_at: null,
      };
      open.push(alarm);
      yield { type: 'alarm.created', data: alarm };
    } else {
      const alarm = open.shift()!;
      yield { type: 'alarm.resolved', data: { ...alarm, resolved: true, resolved_at: at } };
    }
  }
}
