import { BlockList, isIP } from 'node:net';

/**
 * Which network addresses Herald may send webhooks to.
 *
 * A webhook address is chosen by a customer, and Herald sends from inside the
 * operator's network: without a guard, an endpoint such as
 * https://169.254.169.254/… or https://10.0.0.5:9200/ turns Herald into a
 * proxy into that network (server-side request forgery). So, like the hosted
 * services, Herald delivers only to public addresses unless the operator
 * allows a network (`HERALD_ALLOWED_NETWORKS`). The check is made on the
 * address actually connected to, after DNS, so a name that resolves to a
 * private address (or is made to, later) is caught too.
 */

/** Ranges that are not the public internet (IANA special-purpose registries), with what to call them. */
const SPECIAL_V4: Array<[string, number, string]> = [
  ['0.0.0.0', 8, 'unspecified ("this network")'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'carrier-grade NAT'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local (cloud metadata)'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'IETF protocol assignment'],
  ['192.0.2.0', 24, 'documentation'],
  ['192.88.99.0', 24, '6to4 relay'],
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'benchmarking'],
  ['198.51.100.0', 24, 'documentation'],
  ['203.0.113.0', 24, 'documentation'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'],
];
const SPECIAL_V6: Array<[string, number, string]> = [
  ['::', 128, 'unspecified'],
  ['::1', 128, 'loopback'],
  ['64:ff9b:1::', 48, 'local NAT64'],
  ['100::', 64, 'discard-only'],
  ['2001::', 23, 'IETF protocol assignment'],
  ['2001:db8::', 32, 'documentation'],
  ['fc00::', 7, 'unique local (private)'],
  ['fe80::', 10, 'link-local'],
  ['ff00::', 8, 'multicast'],
];

export interface AddressVerdict {
  allowed: boolean;
  /** For a refused address: what kind of address it is ("private", "loopback", …). */
  kind?: string;
}

export class AddressPolicy {
  /** Nothing but public addresses: the default. */
  static readonly PUBLIC_ONLY = new AddressPolicy([]);

  readonly allowedNetworks: readonly string[];
  readonly #allowed = new BlockList();

  /** `allowedNetworks`: CIDR ranges to allow despite being special ("127.0.0.0/8", "fd00::/8"). */
  constructor(allowedNetworks: readonly string[]) {
    this.allowedNetworks = allowedNetworks.map((cidr) => {
      const { address, prefix, family } = parseCidr(cidr);
      this.#allowed.addSubnet(address, prefix, family);
      return `${address}/${prefix}`;
    });
  }

  check(ip: string): AddressVerdict {
    const address = unbracket(ip);
    const family = isIP(address);
    if (family === 0) return { allowed: false, kind: 'malformed' };
    // An IPv4 address written as IPv6 (::ffff:10.0.0.5) is judged as the IPv4 one.
    const mapped = family === 6 ? /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1] : undefined;
    const [a, f] = mapped ? [mapped, 'ipv4' as const] : [address, family === 4 ? ('ipv4' as const) : ('ipv6' as const)];
    if (this.#allowed.check(a, f)) return { allowed: true };
    const kind = specialKind(a, f);
    return kind ? { allowed: false, kind } : { allowed: true };
  }
}

const specialLists = {
  ipv4: SPECIAL_V4.map(([net, prefix, kind]) => ({ list: subnet(net, prefix, 'ipv4'), kind })),
  ipv6: SPECIAL_V6.map(([net, prefix, kind]) => ({ list: subnet(net, prefix, 'ipv6'), kind })),
};

function subnet(net: string, prefix: number, family: 'ipv4' | 'ipv6'): BlockList {
  const list = new BlockList();
  list.addSubnet(net, prefix, family);
  return list;
}

function specialKind(address: string, family: 'ipv4' | 'ipv6'): string | undefined {
  return specialLists[family].find((s) => s.list.check(address, family))?.kind;
}

function unbracket(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/** "10.0.0.0/8" → parts; a bare address is a /32 (or /128). Throws with a message saying what is wrong. */
export function parseCidr(cidr: string): { address: string; prefix: number; family: 'ipv4' | 'ipv6' } {
  const [address = '', prefixText, extra] = cidr.trim().split('/');
  const family = isIP(address);
  if (family === 0 || extra !== undefined) throw new Error(`"${cidr}" is not a network; write it as an address and a prefix length, e.g. 10.0.0.0/8 or fd00::/8`);
  const max = family === 4 ? 32 : 128;
  const prefix = prefixText === undefined ? max : /^\d+$/.test(prefixText) ? Number(prefixText) : NaN;
  if (!(prefix >= 0 && prefix <= max)) throw new Error(`"${cidr}": the prefix length must be a whole number from 0 to ${max}`);
  return { address, prefix, family: family === 4 ? 'ipv4' : 'ipv6' };
}

/** Host names that always mean this machine, whatever DNS says. */
export function isLocalHostName(hostname: string): boolean {
  const h = hostname.toLowerCase().replace(/\.$/, '');
  return h === 'localhost' || h.endsWith('.localhost');
}

/** The sentence for a refused address, shown in the attempt log and in API errors. */
export function refusedAddressMessage(host: string, ip: string, kind: string): string {
  const subject = unbracket(host) === unbracket(ip) ? `${unbracket(ip)} is` : `${host} resolves to ${ip},`;
  return `${subject} a ${kind} address; Herald delivers only to public addresses unless its operator allows that network (HERALD_ALLOWED_NETWORKS)`;
}
