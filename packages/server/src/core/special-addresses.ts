import ipaddr from 'ipaddr.js';

/**
 * What kind of non-public address an IP address is, judged on its bytes.
 *
 * The mindset is an allow-list: an IPv4 address passes unless it lies in a
 * range of IANA's IPv4 special-purpose registry, and an IPv6 address passes
 * only if it is global unicast (2000::/3) and outside IANA's IPv6
 * special-purpose blocks. Anything outside 2000::/3, including blocks
 * IANA assigns there later, is refused until someone looks at it.
 *
 * Many IPv6 forms carry an IPv4 address inside them, and some of those
 * reach it: `::ffff:127.0.0.1` is 127.0.0.1 to the kernel, a NAT64 gateway
 * turns `64:ff9b::a9fe:a9fe` into 169.254.169.254, 6to4 and ISATAP tunnel to
 * the IPv4 address they embed. `embeddedIPv4` finds that address so it is
 * judged as IPv4 too; the WHATWG URL parser rewrites `[::ffff:127.0.0.1]` as
 * `[::ffff:7f00:1]`, so matching on text cannot see it.
 */

export type IP = ipaddr.IPv4 | ipaddr.IPv6;

/** How an IPv6 address carries an IPv4 one. */
export type Embedding = 'IPv4-mapped' | 'IPv4-compatible' | 'IPv4-translated' | 'NAT64' | '6to4' | 'ISATAP';

/** IANA IPv4 special-purpose ranges that are not the public internet, first match wins. */
const SPECIAL_V4: ReadonlyArray<[string, string]> = [
  ['0.0.0.0/8', 'unspecified ("this network")'],
  ['10.0.0.0/8', 'private'],
  ['100.64.0.0/10', 'carrier-grade NAT'],
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'link-local (cloud metadata)'],
  ['172.16.0.0/12', 'private'],
  ['192.0.0.0/24', 'IETF protocol assignment'],
  ['192.0.2.0/24', 'documentation'],
  ['192.88.99.0/24', '6to4 relay'],
  ['192.168.0.0/16', 'private'],
  ['198.18.0.0/15', 'benchmarking'],
  ['198.51.100.0/24', 'documentation'],
  ['203.0.113.0/24', 'documentation'],
  ['224.0.0.0/4', 'multicast'],
  ['240.0.0.0/4', 'reserved'],
];

/**
 * IANA IPv6 special-purpose blocks, and the other ranges worth naming, first
 * match wins. Anything else outside 2000::/3 is refused as not global unicast.
 * Three blocks are missing on purpose, being as public as the IPv4 address
 * they carry, which is judged on its own (`embeddedIPv4`): ::ffff:0:0/96
 * (IPv4-mapped), 64:ff9b::/96 (NAT64) and 2002::/16 (6to4).
 */
const SPECIAL_V6: ReadonlyArray<[string, string]> = [
  ['::/128', 'unspecified'],
  ['::1/128', 'loopback'],
  ['::/96', 'IPv4-compatible (deprecated)'],
  ['::ffff:0:0:0/96', 'IPv4-translated'],
  ['64:ff9b:1::/48', 'local NAT64'],
  ['100::/64', 'discard-only'],
  ['2001::/32', 'Teredo'],
  ['2001::/23', 'IETF protocol assignment'],
  ['2001:db8::/32', 'documentation'],
  ['3fff::/20', 'documentation'],
  ['5f00::/16', 'segment routing (SRv6)'],
  ['fc00::/7', 'unique local (private)'],
  ['fe80::/10', 'link-local'],
  ['fec0::/10', 'site-local (deprecated)'],
  ['ff00::/8', 'multicast'],
];
const GLOBAL_UNICAST_V6 = ipaddr.IPv6.parseCIDR('2000::/3');
/** Outside 2000::/3, yet as public as the IPv4 address it carries (IANA: globally reachable). */
const NAT64_V6 = ipaddr.IPv6.parseCIDR('64:ff9b::/96');
const NOT_GLOBAL_UNICAST = 'reserved (not global unicast)';

const specialV4 = SPECIAL_V4.map(([cidr, kind]) => ({ range: ipaddr.IPv4.parseCIDR(cidr), kind }));
const specialV6 = SPECIAL_V6.map(([cidr, kind]) => ({ range: ipaddr.IPv6.parseCIDR(cidr), kind }));

/**
 * An address in its strict textual form (dotted quad, or IPv6 with an
 * optional zone), or undefined. Only what `net.isIP` accepts is parsed:
 * ipaddr.js alone would also read `127.1` or `0x7f.1`, which never reach
 * here (the URL parser and DNS both give dotted quads) and should not
 * appear in a setting either.
 */
export function parseAddress(text: string, family: number): IP | undefined {
  if (family !== 4 && family !== 6) return undefined;
  try {
    return family === 4 ? ipaddr.IPv4.parse(text) : ipaddr.IPv6.parse(hexTail(text));
  } catch {
    return undefined;
  }
}

/**
 * An IPv6 address with its zone dropped and a dotted IPv4 tail written as
 * two hex groups. ipaddr.js reads `::127.0.0.1` as IPv4-mapped
 * (::ffff:127.0.0.1); inet_pton, the kernel and the URL parser read it as
 * IPv4-compatible (::7f00:1), and libuv prints DNS answers in that form, so
 * the bytes must come from the hex form. The zone names an interface, not
 * part of the address.
 */
function hexTail(text: string): string {
  const address = text.split('%')[0]!;
  return address.replace(/(\d+)\.(\d+)\.(\d+)\.(\d+)$/, (_, a: string, b: string, c: string, d: string) => `${((+a << 8) | +b).toString(16)}:${((+c << 8) | +d).toString(16)}`);
}

export function isIPv6(ip: IP): ip is ipaddr.IPv6 {
  return ip.kind() === 'ipv6';
}

/**
 * The kind of non-public address this is, or undefined if it is public: its
 * own range only. What it carries (`embeddedIPv4`) is for the caller to judge;
 * an IPv4-mapped address counts as not global unicast here.
 */
export function specialKind(ip: IP): string | undefined {
  if (!isIPv6(ip)) return specialV4.find((s) => ip.match(s.range))?.kind;
  const named = specialV6.find((s) => ip.match(s.range))?.kind;
  if (named) return named;
  return ip.match(GLOBAL_UNICAST_V6) || ip.match(NAT64_V6) ? undefined : NOT_GLOBAL_UNICAST;
}

/**
 * The IPv4 addresses an IPv6 address carries, and how: IPv4-mapped
 * (::ffff:0:0/96), IPv4-compatible (::/96 but :: and ::1), IPv4-translated
 * (::ffff:0:0:0/96), NAT64's well-known prefix (64:ff9b::/96), 6to4
 * (2002::/16, bits 16–47) and an ISATAP interface identifier (…:0:5efe:a.b.c.d,
 * under any prefix, so a 6to4 address can carry two). Teredo (2001::/32) is
 * left out: the whole range is refused, so the address it hides cannot
 * change the verdict.
 */
export function embeddedIPv4(ip: ipaddr.IPv6): Array<{ ipv4: ipaddr.IPv4; via: Embedding }> {
  const b = ip.toByteArray();
  const zeros = (from: number, to: number) => b.slice(from, to).every((x) => x === 0);
  const at = (from: number) => new ipaddr.IPv4(b.slice(from, from + 4));
  if (zeros(0, 10) && b[10] === 0xff && b[11] === 0xff) return [{ ipv4: at(12), via: 'IPv4-mapped' }];
  if (zeros(0, 12)) return zeros(12, 15) && b[15]! <= 1 ? [] : [{ ipv4: at(12), via: 'IPv4-compatible' }];
  if (zeros(0, 8) && b[8] === 0xff && b[9] === 0xff && zeros(10, 12)) return [{ ipv4: at(12), via: 'IPv4-translated' }];
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zeros(4, 12)) return [{ ipv4: at(12), via: 'NAT64' }];
  const found: Array<{ ipv4: ipaddr.IPv4; via: Embedding }> = [];
  if (b[0] === 0x20 && b[1] === 0x02) found.push({ ipv4: at(2), via: '6to4' });
  // RFC 5214: the interface identifier is 0000:5efe or 0200:5efe (the
  // universal/local and group bits may be set) followed by the IPv4 address.
  if ((b[8]! & 0xfc) === 0 && b[9] === 0 && b[10] === 0x5e && b[11] === 0xfe) found.push({ ipv4: at(12), via: 'ISATAP' });
  return found;
}
