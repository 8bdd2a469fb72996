import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { isIPv6, parseAddress } from './special-addresses.ts';

/** The one bucket every address that cannot be read shares. */
export const UNPARSEABLE_CLIENT = 'unparseable';

/**
 * The key every per-client limit counts under (failed authentications,
 * sign-in tries, the rate limit of requests without a credential), from
 * `request.ip`.
 *
 * One client must get one key, however it writes its address:
 * - Behind a trusted proxy, `request.ip` is the proxy's text verbatim, so a
 *   port and brackets are dropped (`1.2.3.4:5678`, `[2001:db8::1]:443`) and
 *   the address is written one way (`2001:DB8::0:1` is `2001:db8::1`).
 *   Otherwise a proxy that appends the client's port gives every connection
 *   its own budget.
 * - An IPv4-mapped IPv6 address (`::ffff:1.2.3.4`, a dual-stack socket) is
 *   its IPv4 address.
 * - An IPv6 address is its /64: a host is given a /64 and may use any
 *   address in it, so counting each address would let it rotate freely.
 * - Anything else (`garbage`, `unknown`) shares one bucket: text no proxy of
 *   ours writes should not earn a budget per spelling.
 *
 * @example
 * clientKey('[2001:db8:1:2::64]:443') // '2001:db8:1:2::/64'
 * clientKey('::ffff:198.51.100.7')     // '198.51.100.7'
 */
export function clientKey(ip: string): string {
  const text = withoutPort(ip.trim());
  const address = parseAddress(text, isIP(text.split('%')[0]!));
  if (!address) return UNPARSEABLE_CLIENT;
  if (!isIPv6(address)) return address.toString();
  if (address.isIPv4MappedAddress()) return address.toIPv4Address().toString();
  const parts = address.parts.slice(0, 4);
  return `${new ipaddr.IPv6([...parts, 0, 0, 0, 0]).toString()}/64`;
}

/** `[v6]:port` and `[v6]` → `v6`; `v4:port` → `v4`; a bare IPv6 address (several colons) as it is. */
function withoutPort(text: string): string {
  const bracketed = /^\[([^\]]*)\](?::\d+)?$/.exec(text);
  if (bracketed) return bracketed[1]!;
  const v4WithPort = /^([^:]*):\d+$/.exec(text);
  return v4WithPort ? v4WithPort[1]! : text;
}
