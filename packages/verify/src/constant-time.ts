/**
 * Constant-time matching of HMAC digests.
 *
 * Every (expected, candidate) pair is compared over its full length and the
 * results are OR-ed together, with no early exit on the first differing byte
 * nor on the first match. The time taken depends only on how many secrets and
 * signatures there are (both public), never on how much of a forged
 * signature happens to be right. The comparison is on the decoded 32-byte
 * digests, not on the hex strings.
 */
export function anyDigestMatches(expected: readonly Uint8Array[], candidates: readonly Uint8Array[]): boolean {
  let matched = 0;
  for (const digest of expected) {
    for (const candidate of candidates) matched |= equalBytes(digest, candidate);
  }
  return matched === 1;
}

/** 1 when equal, else 0. Lengths are public (always 32 here), so a length mismatch may return at once. */
function equalBytes(a: Uint8Array, b: Uint8Array): number {
  if (a.length !== b.length) return 0;
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= a[i]! ^ b[i]!;
  return difference === 0 ? 1 : 0;
}
