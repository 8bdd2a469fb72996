import { openHeaders, type StoredHeader } from '../core/custom-headers.ts';
import type { ClaimedDelivery } from '../storage/queries/claim-deliveries.ts';

const ENDPOINTS_CACHED = 10_000;
const NONE: ReadonlyArray<[string, string]> = [];

/**
 * Opens endpoints' custom headers (parsed, secret values decrypted), keeping
 * each with the JSON text it came from: a delivery to an endpoint whose
 * headers have not changed costs one string comparison, and an update (which
 * writes new text: a sealed value is sealed afresh) takes effect on the very
 * next attempt. An endpoint with none costs nothing.
 */
export function headersOpener(encryptionKey: Buffer): (d: ClaimedDelivery) => ReadonlyArray<[string, string]> {
  const opened = new Map<string, { text: string; headers: Array<[string, string]> }>();
  return (d) => {
    if (!d.headers) return NONE;
    const hit = opened.get(d.endpoint_id);
    if (hit?.text === d.headers) return hit.headers;
    const headers = openHeaders(encryptionKey, d.endpoint_id, JSON.parse(d.headers) as StoredHeader[]);
    if (opened.size >= ENDPOINTS_CACHED) opened.clear();
    opened.set(d.endpoint_id, { text: d.headers, headers });
    return headers;
  };
}
