import { randomUUID } from 'node:crypto';

/**
 * Makes version-7 UUIDs (RFC 9562): the Unix time in milliseconds in the
 * first 48 bits, then the version, 12 random bits, the variant and 62 random
 * bits. Ids made this way land at the right-hand edge of their indexes
 * (docs/decisions/0009).
 *
 * Made from Node's randomUUID(), which draws its random bytes from a pool, by
 * writing the time over its first 48 bits and its version over the 4. The uuid
 * package's v7() draws 16 fresh bytes through crypto.getRandomValues() on
 * every call: 4.4 % of the worker's busy time in the benchmark's burst, against
 * 0.4 % for this.
 *
 * A maker remembers the time part of the last millisecond asked for: a busy
 * worker makes many ids in the same millisecond, and writing it out each time
 * was most of what an id cost in allocations. So code that makes many ids
 * keeps one maker (the services get theirs from createServiceDeps).
 *
 * @example
 *   const ids = new UuidV7Maker();
 *   ids.next(Date.parse('2026-11-20T08:00:00.123Z')); // '01a1f7f8-307b-7…'
 */
export class UuidV7Maker {
  // NaN equals nothing, so the first call checks its argument like any other new one.
  private prefixMs = Number.NaN;
  private prefix = '';

  next(ms: number = Date.now()): string {
    if (ms !== this.prefixMs) {
      if (!Number.isSafeInteger(ms) || ms < 0 || ms >= 2 ** 48) throw new RangeError(`a UUID v7 needs whole milliseconds from 0 to 2^48 - 1, got ${ms}`);
      const time = ms.toString(16).padStart(12, '0');
      this.prefix = `${time.slice(0, 8)}-${time.slice(8, 12)}-7`;
      this.prefixMs = ms;
    }
    // randomUUID(): xxxxxxxx-xxxx-4xxx-Vxxx-xxxxxxxxxxxx, with the RFC variant in V.
    return this.prefix + randomUUID().slice(15);
  }
}

/** One version-7 UUID, remembering nothing between calls: for code that makes few (a busy caller keeps a UuidV7Maker). */
export function uuidV7(ms: number = Date.now()): string {
  return new UuidV7Maker().next(ms);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A UUID in its hyphenated form, as PostgreSQL reads one (36 dashes or 36 hex digits would make it refuse the query). */
export function isUuid(s: unknown): s is string {
  return typeof s === 'string' && UUID.test(s);
}
