import { openHeaders, type StoredHeader } from '../core/custom-headers.ts';
import { decryptSecret } from '../core/secrets.ts';
import type { ClaimedDelivery } from '../storage/queries/claim-deliveries.ts';

/** Endpoints whose opened values one opener keeps; past this many it starts afresh. */
const ENDPOINTS_CACHED = 10_000;
const NO_HEADERS: ReadonlyArray<[string, string]> = [];

/**
 * Opens a value stored on an endpoint (decrypts it, parses it) once, and
 * keeps the result with the stored value it came from: the next delivery to
 * the endpoint costs one comparison, and a change (a rotation, an update,
 * which stores a new value) takes effect on the very next attempt.
 */
function openedPerEndpoint<S, T>(same: (a: S, b: S) => boolean, open: (endpointId: string, stored: S) => T): (endpointId: string, stored: S) => T {
  const opened = new Map<string, { stored: S; value: T }>();
  return (endpointId, stored) => {
    const hit = opened.get(endpointId);
    if (hit && same(hit.stored, stored)) return hit.value;
    const value = open(endpointId, stored);
    if (opened.size >= ENDPOINTS_CACHED) opened.clear();
    opened.set(endpointId, { stored, value });
    return value;
  };
}

/** Opens endpoints' signing secrets. One opener per column (the current secret, the previous one). */
export function secretOpener(encryptionKey: Buffer): (endpointId: string, encrypted: Buffer) => string {
  return openedPerEndpoint<Buffer, string>(
    (a, b) => a.equals(b),
    (endpointId, encrypted) => decryptSecret(encryptionKey, encrypted, endpointId),
  );
}

/** Opens endpoints' custom headers (parsed, secret values decrypted); an endpoint with none costs nothing. */
export function headersOpener(encryptionKey: Buffer): (d: ClaimedDelivery) => ReadonlyArray<[string, string]> {
  const open = openedPerEndpoint<string, Array<[string, string]>>(
    (a, b) => a === b,
    (endpointId, text) => openHeaders(encryptionKey, endpointId, JSON.parse(text) as StoredHeader[]),
  );
  return (d) => (d.headers ? open(d.endpoint_id, d.headers) : NO_HEADERS);
}
