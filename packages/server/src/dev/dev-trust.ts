import { BlockList, isIP } from 'node:net';
import { checkServerIdentity, rootCertificates, type ConnectionOptions, type PeerCertificate } from 'node:tls';
import { issuedBy } from './dev-ca.ts';

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/** `localhost`, or a literal loopback address: the names `herald listen`'s certificate is for. */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, '').replace(/\.$/, '');
  if (h === 'localhost') return true;
  const family = isIP(h);
  return family !== 0 && LOOPBACK.check(h, family === 4 ? 'ipv4' : 'ipv6');
}

/**
 * TLS options for development mode's outgoing connections: the system CAs
 * plus the development CA, which is trusted for loopback destinations only.
 *
 * Its key sits in the data directory, readable by whatever runs as the
 * developer. Were the CA trusted everywhere, that key would let anyone who
 * copies it impersonate any receiver to this Herald; trusted for
 * `localhost` and 127.0.0.0/8 / ::1 only, it can vouch for nothing but the
 * developer's own machine. A certificate it issued for any other host fails
 * the handshake, as an untrusted one would without --dev.
 *
 * `extraCas`: PEM bundles trusted besides the system CAs (the file named by
 * NODE_EXTRA_CA_CERTS).
 *
 * Passed to undici's buildConnector (createAgent's `connect`), which hands
 * them to tls.connect.
 *
 * @example
 *   const ca = await loadOrCreateDevCa(config.dataDir);
 *   const agent = createAgent({ connections: 4, addresses, timeoutMs, connect: devTlsOptions(ca.certPem) });
 */
export function devTlsOptions(devCaPem: string, extraCas: string[] = []): Pick<ConnectionOptions, 'ca' | 'checkServerIdentity'> {
  return {
    // A `ca` list replaces Node's, NODE_EXTRA_CA_CERTS included: those come back through `extraCas`.
    ca: [...rootCertificates, ...extraCas, devCaPem],
    checkServerIdentity(host: string, cert: PeerCertificate) {
      if (!isLoopbackHost(host) && cert.raw && issuedBy(cert.raw, devCaPem)) {
        return Object.assign(
          new Error(`certificate for ${host} is signed by Herald's development CA, which is trusted for localhost and loopback addresses only`),
          { code: 'HERALD_DEV_CA_NOT_LOOPBACK' },
        );
      }
      return checkServerIdentity(host, cert);
    },
  };
}
