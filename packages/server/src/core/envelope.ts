import { createHash } from 'node:crypto';

/**
 * The envelope is serialised once, when the event is accepted; every endpoint
 * and every retry receives exactly these bytes (docs/decisions/0005).
 */
export interface Envelope {
  id: string;
  type: string;
  created_at: string;
  data: unknown;
}

export function serialiseEnvelope(envelope: Envelope): Buffer {
  // Key order is fixed here: id, type, created_at, data.
  const { id, type, created_at, data } = envelope;
  return Buffer.from(JSON.stringify({ id, type, created_at, data }), 'utf8');
}

/**
 * Identifies what a producer asked for, independent of key order, so that a
 * retried publish with the same id is recognised as the same request.
 */
export function requestHash(type: string, data: unknown): Buffer {
  return createHash('sha256').update(canonicalJson({ type, data })).digest();
}

export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
