import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { Agent, buildConnector } from 'undici';
import { refusedAddressMessage, type AddressPolicy, type AddressVerdict } from '../core/address-policy.ts';

/** A connection refused by the address policy before it was opened. */
export class AddressRefusedError extends Error {
  readonly code = 'HERALD_ADDRESS_REFUSED';
  constructor(host: string, ip: string, verdict: AddressVerdict) {
    super(refusedAddressMessage(host, ip, verdict));
    this.name = 'AddressRefusedError';
  }
}

/**
 * Resolves a host name to every address it has, as `dns.lookup(name, {
 * all: true })` does (the default). Tests pass one that maps names to
 * whatever addresses they need.
 */
export type ResolveHost = (hostname: string, options: Pick<LookupOptions, 'family' | 'hints'>, callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void) => void;

const resolveWithDns: ResolveHost = (hostname, options, callback) => dnsLookup(hostname, { ...options, all: true }, callback);

/**
 * A socket's lookup that keeps only the addresses the policy allows, so the
 * socket can only connect to a checked address (no window for DNS rebinding
 * between a check and the connection). Every address is checked, whichever
 * the socket would try first; a name with none left fails with the first
 * refused one's reason.
 */
export function checkedLookup(policy: AddressPolicy, resolve: ResolveHost = resolveWithDns): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, { family: options.family, hints: options.hints }, (err, addresses) => {
      if (err) return (callback as (e: Error) => void)(err);
      const allowed = addresses.filter((a) => policy.check(a.address).allowed);
      if (allowed.length === 0) {
        const first = addresses[0];
        const refused = first
          ? new AddressRefusedError(hostname, first.address, policy.check(first.address))
          : Object.assign(new Error(`DNS: no address for ${hostname}`), { code: 'ENOTFOUND' });
        return (callback as (e: Error) => void)(refused);
      }
      if (options.all) (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, allowed);
      else callback(null, allowed[0]!.address, allowed[0]!.family);
    });
  };
}

/**
 * One keep-alive pool per origin of at most `connections` connections;
 * redirects are never followed (no interceptor). Every connection goes
 * through the address policy: a literal IP is checked here, a name after its
 * DNS lookup (`lookup`, node's `dns.lookup` unless given). Nothing is
 * connected to for a refused address.
 *
 * The dispatcher's agent has as many connections per origin as the origin
 * cap allows requests in flight, so no request waits inside undici for a
 * connection: it is sent as soon as it is handed over.
 *
 * `timeoutMs` is the attempts' deadline, and also bounds a connection's
 * set-up (DNS, TCP and TLS): an aborted request ends only once undici has
 * its connection, so a handshake that hangs ends at the connect timeout,
 * which is undici's 10 s unless given here.
 */
export function createAgent(options: {
  connections: number;
  addresses: AddressPolicy;
  timeoutMs: number;
  connect?: buildConnector.BuildOptions;
  lookup?: ResolveHost;
}): Agent {
  const connectTls = buildConnector({ timeout: options.timeoutMs, ...options.connect, lookup: checkedLookup(options.addresses, options.lookup) } as buildConnector.BuildOptions);
  const connect: buildConnector.connector = (opts, callback) => {
    const host = opts.hostname.startsWith('[') ? opts.hostname.slice(1, -1) : opts.hostname;
    if (isIP(host)) {
      const verdict = options.addresses.check(host);
      if (!verdict.allowed) {
        callback(new AddressRefusedError(host, host, verdict), null);
        return;
      }
    }
    connectTls(opts, callback);
  };
  return new Agent({
    connections: options.connections,
    pipelining: 1,
    keepAliveTimeout: 30_000,
    connect,
  });
}
