import { describeUntrusted, WebhookVerificationError } from './errors.ts';
import { HEADER, SIGNATURE_PREFIX } from './scheme.ts';

/**
 * Reading `X-Service-Signature`.
 *
 * Herald sends one entry, `v1=<64 lowercase hex>`. For forward compatibility
 * the header is read as a list: entries are separated by spaces (commas are
 * accepted too, because Node and Fetch join a repeated header with ", "), the
 * request passes if any v1 entry matches, and entries of other versions
 * (`v2=…`) are skipped, so a future Herald can send old and new schemes side
 * by side while receivers upgrade.
 *
 * Strict where it costs nothing: every v1 value must be exactly 64 lowercase
 * hex digits. Uppercase is refused: the scheme says lowercase, Herald never
 * sends anything else, and a single canonical form means a malformed header
 * is reported as malformed rather than as a mismatch.
 */

const SEPARATORS = /[ ,]+/;
const ENTRY = /^v[0-9]+=/;
const V1_HEX = /^[0-9a-f]{64}$/;

/** The v1 digests (32 bytes each) carried by the header's values (from `readHeader`, known non-empty). */
export function parseSignatures(values: readonly string[]): Uint8Array[] {
  const entries = values.join(' ').split(SEPARATORS).filter((entry) => entry !== '');
  const digests: Uint8Array[] = [];
  for (const entry of entries) {
    if (!ENTRY.test(entry)) {
      throw malformed(`an entry is not of the form v1=<hex> (${describeUntrusted(entry)})`);
    }
    if (!entry.startsWith(SIGNATURE_PREFIX)) continue; // another scheme version
    const hex = entry.slice(SIGNATURE_PREFIX.length);
    if (!V1_HEX.test(hex)) throw malformed(whyNotHex(hex));
    digests.push(hexToBytes(hex));
  }
  if (digests.length === 0) {
    throw malformed(
      'it carries no v1= signature. If Herald now sends a newer scheme, upgrade @herald/verify',
    );
  }
  return digests;
}

function whyNotHex(hex: string): string {
  if (hex.length !== 64) return `a v1 signature must be 64 hex digits; got ${hex.length}`;
  if (/^[0-9a-fA-F]{64}$/.test(hex)) return 'a v1 signature must be lowercase hex; Herald never sends uppercase';
  return 'a v1 signature must be 64 lowercase hex digits; it contains other characters';
}

function malformed(reason: string): WebhookVerificationError {
  return new WebhookVerificationError(
    'malformed_signature',
    `${HEADER.signature} is malformed: ${reason}. Reject the request.`,
    { header: HEADER.signature },
  );
}

function hexToBytes(hex: string): Uint8Array {
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = Number.parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return bytes;
}
