import { isIP } from 'node:net';
import { invalidField, type HeraldError } from '../errors.ts';
import { isLocalHostName, refusedAddressMessage, type AddressPolicy } from './address-policy.ts';

const MAX_URL_LENGTH = 2048;

/**
 * The address must use https: http is refused, since events would travel
 * unencrypted. Returns the
 * normalised URL or throws a 400 that says what to fix. An address the policy
 * would refuse (a private or loopback IP, `localhost`) is refused here too, so
 * the customer hears it now rather than from failed attempts; a name that
 * resolves to such an address is caught when Herald connects. The URL parser
 * has already turned every way of writing an IPv4 address (2130706433,
 * 0x7f.1, 127.1, 0177.0.0.1, full-width digits, percent-encoding) into a
 * dotted quad and every IPv6 one into its short form, so `hostname` is the
 * address as the policy should see it.
 */
export function parseEndpointUrl(raw: unknown, addresses: AddressPolicy, field = 'url'): string {
  const fail = (message: string): HeraldError => invalidField(field, message, 'invalid_url');
  if (typeof raw !== 'string' || raw.trim() === '') throw fail('is required: give the https address of your receiver, e.g. https://example.com/webhooks');
  if (raw.length > MAX_URL_LENGTH) throw fail(`must be at most ${MAX_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw fail(`"${raw}" is not a URL; give a full address such as https://example.com/webhooks`);
  }
  if (url.protocol === 'http:') throw fail('must use https: http is not accepted, because events would travel unencrypted; use https://' + url.host + url.pathname);
  if (url.protocol !== 'https:') throw fail(`must use https, not ${url.protocol.replace(/:$/, '')}`);
  if (!url.hostname) throw fail('must name a host');
  if (url.username || url.password) throw fail('must not contain a user name or password; requests are authenticated by their signature');
  if (url.hash) throw fail('must not contain a #fragment, which is never sent to the server');
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const ip = isIP(host) ? host : isLocalHostName(host) ? '127.0.0.1' : undefined;
  if (ip) {
    const verdict = addresses.check(ip);
    if (!verdict.allowed) throw fail(`cannot be used: ${refusedAddressMessage(host, ip, verdict)}`);
  }
  return url.toString();
}
