import { test } from 'node:test';
import assert from 'node:assert/strict';
import { clientKey, UNPARSEABLE_CLIENT } from '../src/core/client-key.ts';

/**
 * Every per-client limit counts under clientKey(request.ip). Behind a
 * trusted proxy request.ip is the proxy's text verbatim, so one client must
 * get one key however that text is written.
 */
const CASES: Array<[string, string]> = [
  ['198.51.100.7', '198.51.100.7'],
  // A port, as some proxies append it: one key for every connection.
  ['198.51.100.7:5678', '198.51.100.7'],
  ['[2001:db8::1]:443', '2001:db8::/64'],
  ['[2001:db8::1]', '2001:db8::/64'],
  // One address, however written.
  ['2001:DB8::0:1', '2001:db8::/64'],
  ['2001:0db8:0000:0000:0000:0000:0000:0001', '2001:db8::/64'],
  // An IPv6 host has a /64: every address in it is the same client.
  ['2001:db8:1:2::1', '2001:db8:1:2::/64'],
  ['2001:db8:1:2::64', '2001:db8:1:2::/64'],
  ['2001:db8:1:2:ffff:ffff:ffff:ffff', '2001:db8:1:2::/64'],
  ['2001:db8:1:3::1', '2001:db8:1:3::/64'],
  ['fe80::1%eth0', 'fe80::/64'],
  // IPv4-mapped (a dual-stack socket) is the IPv4 address.
  ['::ffff:198.51.100.7', '198.51.100.7'],
  ['::FFFF:c633:6407', '198.51.100.7'],
  ['[::ffff:198.51.100.7]:80', '198.51.100.7'],
  ['  198.51.100.7  ', '198.51.100.7'],
  // Anything else shares one bucket.
  ['garbage', UNPARSEABLE_CLIENT],
  ['unknown', UNPARSEABLE_CLIENT],
  ['', UNPARSEABLE_CLIENT],
  ['127.1', UNPARSEABLE_CLIENT],
  ['198.51.100.7:', UNPARSEABLE_CLIENT],
  ['[garbage]:443', UNPARSEABLE_CLIENT],
  ['198.51.100.7, 203.0.113.1', UNPARSEABLE_CLIENT],
];

test('clientKey: one key per client, whatever the form of its address', () => {
  for (const [ip, key] of CASES) assert.equal(clientKey(ip), key, JSON.stringify(ip));
});
