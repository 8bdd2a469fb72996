import { isIP } from 'node:net';
import { embeddedIPv4, isIPv6, parseAddress, specialKind, type Embedding, type IP } from './special-addresses.ts';

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
 *
 * An allowed network is matched against the address as written, and, for
 * an IPv4-mapped address only, against the IPv4 address it stands for (the
 * one the socket really reaches). See #judge for why the other embedded
 * forms are not.
 */

export interface AddressVerdict {
  allowed: boolean;
  /** For a refused address: what kind of address it is ("private", "loopback", …). */
  kind?: string;
  /** For an IPv6 address refused for the IPv4 address it carries: that address, and how it is carried. */
  embedded?: { ipv4: string; via: Embedding };
}

/**
 * The one judge of an address, for every IP literal in an endpoint's URL
 * (saved, changed, test-sent or delivered to) and every address a name
 * resolves to when Herald connects. Addresses are judged on their bytes
 * (special-addresses.ts); only public ones pass, unless the operator
 * allows their network.
 *
 * @example
 *   new AddressPolicy(['10.20.0.0/16']).check('::ffff:10.20.0.5'); // { allowed: true }
 *   AddressPolicy.PUBLIC_ONLY.check('64:ff9b::a9fe:a9fe');
 *   // { allowed: false, kind: 'link-local (cloud metadata)', embedded: { ipv4: '169.254.169.254', via: 'NAT64' } }
 */
export class AddressPolicy {
  /** Nothing but public addresses: the default. */
  static readonly PUBLIC_ONLY = new AddressPolicy([]);

  readonly allowedNetworks: readonly string[];
  readonly #allowed: Array<[IP, number]> = [];

  /** `allowedNetworks`: CIDR ranges to allow despite being special ("127.0.0.0/8", "fd00::/8"). */
  constructor(allowedNetworks: readonly string[]) {
    this.allowedNetworks = allowedNetworks.map((cidr) => {
      const { address, prefix, family } = parseCidr(cidr);
      this.#allowed.push([parseAddress(address, family === 'ipv4' ? 4 : 6)!, prefix]);
      return `${address}/${prefix}`;
    });
  }

  /** `ip`: an address as text, IPv6 with or without brackets. */
  check(ip: string): AddressVerdict {
    const text = unbracket(ip);
    const address = parseAddress(text, isIP(text));
    return address ? this.#judge(address) : { allowed: false, kind: 'malformed' };
  }

  #judge(address: IP): AddressVerdict {
    if (this.#allows(address)) return { allowed: true };
    if (isIPv6(address)) {
      const carried = embeddedIPv4(address);
      // An IPv4-mapped address is the IPv4 address to the kernel (a socket
      // connects to 127.0.0.1 for ::ffff:7f00:1): it is judged exactly as
      // that address, networks the operator allows included.
      if (carried[0]?.via === 'IPv4-mapped') {
        const verdict = this.#judge(carried[0].ipv4);
        return verdict.allowed ? verdict : { ...verdict, embedded: { ipv4: carried[0].ipv4.toString(), via: 'IPv4-mapped' } };
      }
      // Every other form reaches its IPv4 address through a gateway or a
      // tunnel, where an allowed network may mean another machine (a NAT64
      // gateway's 127.0.0.1 is the gateway): the IPv4 address must be
      // public. To allow such addresses, the operator names the IPv6 range.
      for (const { ipv4, via } of carried) {
        const kind = specialKind(ipv4);
        if (kind) return { allowed: false, kind, embedded: { ipv4: ipv4.toString(), via } };
      }
    }
    const kind = specialKind(address);
    return kind ? { allowed: false, kind } : { allowed: true };
  }

  #allows(address: IP): boolean {
    return this.#allowed.some(([network, prefix]) => network.kind() === address.kind() && address.match(network, prefix));
  }
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

/**
 * The sentence for a refused address, shown in the attempt log and in API
 * errors. It never names the port: nothing was connected to, so it is the
 * same whether anything listens there. For an address the customer wrote
 * it shows that address; for a host name only the kind of address it
 * resolves to, not which: a tenant could otherwise read the operator's
 * internal DNS (db.internal → 10.1.2.3) one test send at a time.
 */
export function refusedAddressMessage(host: string, ip: string, verdict: AddressVerdict): string {
  const address = unbracket(ip);
  const kind = verdict.kind ?? 'special';
  const aKind = `${/^(?!uni)[aeiou]/i.test(kind) ? 'an' : 'a'} ${kind} address`;
  const unless = 'Herald delivers only to public addresses unless its operator allows that network (HERALD_ALLOWED_NETWORKS)';
  if (unbracket(host) !== address) {
    const leadsTo = verdict.embedded ? `an address that leads to ${aKind} (${verdict.embedded.via})` : aKind;
    return `${host} resolves to ${leadsTo}; ${unless}`;
  }
  const subject = verdict.embedded ? `${address} leads to ${verdict.embedded.ipv4} (${verdict.embedded.via}),` : `${address} is`;
  return `${subject} ${aKind}; ${unless}`;
}
