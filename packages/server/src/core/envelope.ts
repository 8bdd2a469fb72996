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

/** How far into an envelope its created_at is looked for: after the id (a UUID) and the type (a catalog name, short in practice). */
const CREATED_AT_WITHIN = 1024;

/**
 * An envelope's created_at, read from its first bytes (serialiseEnvelope
 * writes it third) without parsing a body that may be a megabyte; null if
 * it is not within
 * the first CREATED_AT_WITHIN bytes.
 */
export function envelopeCreatedAt(body: Buffer): Date | null {
  const head = body.subarray(0, CREATED_AT_WITHIN).toString('latin1');
  const match = /^\{"id":"[^"]*","type":"[^"]*","created_at":"([^"]{1,40})"/.exec(head);
  const at = match ? new Date(match[1]!) : null;
  return at && !Number.isNaN(at.getTime()) ? at : null;
}
