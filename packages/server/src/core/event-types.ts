/**
 * The four published event types, with JSON Schemas for their data (open
 * enumerations accept any non-empty string, shipment_id may
 * be null, the Shipment record is an object with an id whose other fields pass
 * through) and a realistic example each.
 */
export interface EventTypeDefinition {
  name: string;
  description: string;
  schema: Record<string, unknown>;
  example: Record<string, unknown>;
}

const uuid = { type: 'string', format: 'uuid' };
const timestamp = { type: 'string', format: 'date-time' };
const label = { type: 'string', minLength: 1 };

function alarmSchema(resolved: boolean): Record<string, unknown> {
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    title: resolved ? 'Alarm record (resolved)' : 'Alarm record (raised)',
    type: 'object',
    required: ['id', 'device_id', 'shipment_id', 'type', 'severity', 'source', 'message', 'resolved', 'created_at', 'resolved_at'],
    properties: {
      id: uuid,
      device_id: uuid,
      shipment_id: { type: ['integer', 'null'] },
      type: label,
      severity: label,
      source: label,
      message: { type: 'string' },
      resolved: { const: resolved },
      created_at: timestamp,
      resolved_at: resolved ? timestamp : { type: 'null' },
    },
  };
}

const shipmentSchema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  title: 'Shipment record',
  type: 'object',
  required: ['id'],
  properties: {
    id: { anyOf: [{ type: 'integer' }, { type: 'string', minLength: 1 }] },
  },
};

const alarmExample = {
  id: '6f1c2a7e-9b3d-4e58-a1c4-2d7e8f9a0b1c',
  device_id: '0d8e4b2a-7c1f-4a36-9e5d-3b2c1a0f9e8d',
  shipment_id: 48213,
  type: 'temperature',
  severity: 'high',
  source: 'sensor',
  message: 'Temperature above 8 °C for 15 minutes',
  resolved: false,
  created_at: '2026-11-20T08:14:03.000Z',
  resolved_at: null,
};

export const BUILTIN_EVENT_TYPES: readonly EventTypeDefinition[] = [
  {
    name: 'alarm.created',
    description: 'A new alarm is raised.',
    schema: alarmSchema(false),
    example: alarmExample,
  },
  {
    name: 'alarm.resolved',
    description: 'An alarm is marked resolved.',
    schema: alarmSchema(true),
    example: { ...alarmExample, resolved: true, resolved_at: '2026-11-20T09:02:41.000Z' },
  },
  {
    name: 'shipment.created',
    description: 'A new shipment is created.',
    schema: shipmentSchema,
    example: { id: 48213, reference: 'PO-2026-11-0042', origin: 'Rotterdam', destination: 'Lyon' },
  },
  {
    name: 'shipment.completed',
    description: 'A shipment is completed.',
    schema: shipmentSchema,
    example: { id: 48213, reference: 'PO-2026-11-0042', completed_at: '2026-11-22T16:40:00.000Z' },
  },
];

/** Event type names: lowercase dotted words, e.g. `alarm.created`. */
export const EVENT_TYPE_NAME = /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$/;
