import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import { AddressPolicy } from '../src/core/address-policy.ts';
import { checkedLookup, createAgent, type ResolveHost } from '../src/outbound/agent.ts';
import { sendAttempt } from '../src/outbound/send.ts';
import { describeTransportError } from '../src/outbound/transport-errors.ts';
import { createEndpoint } from '../src/services/endpoints.ts';
import { ENGINES } from './helpers/engines.ts';
import { alarmData, createTestHerald, type TestHerald } from './helpers/herald.ts';
import { startReceiver, type Receiver } from './helpers/receiver.ts';
import { TLS } from './helpers/tls.ts';
import { closedPort } from './helpers/ports.ts';

/**
 * Every way of writing or resolving to a non-public address is refused:
 * when an endpoint is saved or changed (IP literals), and when Herald
 * connects, for test sends and deliveries alike (names, after DNS, and
 * endpoints saved before the policy knew better). A loopback receiver counts
 * the connections it accepts, and must accept none.
 *
 * Nothing here sends a packet beyond this machine. Names resolve through a
 * test resolver, never DNS. The full path (API and dispatcher, real
 * sockets) uses only refused addresses that would reach the loopback
 * receiver (or at least stay on this machine) if the policy let them
 * through; a control run with a policy that allows everything shows that
 * they do reach it. Forms that would leave the machine (NAT64, 6to4, ULA, …)
 * are checked at the lookup the sockets use, where no socket exists yet.
 * Public addresses are checked by verdict only.
 */

const PUBLIC_ONLY = AddressPolicy.PUBLIC_ONLY;
const ALLOW_EVERYTHING = new AddressPolicy(['0.0.0.0/0', '::/0']);
const REFUSAL = /(,| is| to) an? [^;]+ address( \([^)]+\))?; Herald delivers only to public addresses unless its operator allows that network \(HERALD_ALLOWED_NETWORKS\)$/;

/** A resolver from a table; a name not in it is not found (nothing falls through to DNS). */
function testResolver(table: Record<string, string[]>): ResolveHost {
  return (hostname, options, callback) => {
    const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : (options.family ?? 0);
    const addresses = table[hostname.toLowerCase()];
    setImmediate(() => {
      if (!addresses) return callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []);
      callback(null, addresses.map((address) => ({ address, family: isIP(address) })).filter((a) => family === 0 || a.family === family));
    });
  };
}

/** The lookup a socket would make, with `all` as net asks for it. */
function lookUp(resolve: ResolveHost, policy: AddressPolicy, name: string, all: boolean): Promise<{ err: (Error & { code?: string }) | null; addresses: LookupAddress[] }> {
  return new Promise((done) => {
    checkedLookup(policy, resolve)(name, { all }, ((err: Error | null, address: string | LookupAddress[], family?: number) => {
      if (err) return done({ err, addresses: [] });
      done({ err: null, addresses: Array.isArray(address) ? address : [{ address, family: family! }] });
    }) as never);
  });
}


describe('the address classifier, on bytes', () => {
  test('IPv6 forms that carry a non-public IPv4 address are judged by it, however they are written', () => {
    const cases: Array<[string, string, string | undefined]> = [
      // [address, kind, how it carries the IPv4 address it is judged by]
      ['::ffff:7f00:1', 'loopback', 'IPv4-mapped'],
      ['::ffff:127.0.0.1', 'loopback', 'IPv4-mapped'],
      ['0:0:0:0:0:ffff:127.0.0.1', 'loopback', 'IPv4-mapped'],
      ['::FFFF:7F00:0001', 'loopback', 'IPv4-mapped'],
      ['[::ffff:a9fe:a9fe]', 'link-local (cloud metadata)', 'IPv4-mapped'],
      ['::ffff:10.0.0.5', 'private', 'IPv4-mapped'],
      ['::ffff:0.0.0.0', 'unspecified ("this network")', 'IPv4-mapped'],
      ['64:ff9b::a9fe:a9fe', 'link-local (cloud metadata)', 'NAT64'],
      ['64:ff9b::127.0.0.1', 'loopback', 'NAT64'],
      ['64:ff9b::c0a8:1', 'private', 'NAT64'],
      ['2002:7f00:1::', 'loopback', '6to4'],
      ['2002:a9fe:a9fe::1', 'link-local (cloud metadata)', '6to4'],
      ['2002:a00:5:1::1', 'private', '6to4'],
      ['::127.0.0.1', 'loopback', 'IPv4-compatible'],
      ['::a00:5', 'private', 'IPv4-compatible'],
      ['::ffff:0:7f00:1', 'loopback', 'IPv4-translated'],
      ['::5efe:7f00:1', 'loopback', 'ISATAP'],
      ['2606:4700::5efe:a00:5', 'private', 'ISATAP'],
      ['2606:4700::200:5efe:a9fe:a9fe', 'link-local (cloud metadata)', 'ISATAP'],
      ['2002:808:808::5efe:7f00:1', 'loopback', 'ISATAP'],
    ];
    for (const [ip, kind, via] of cases) {
      const verdict = PUBLIC_ONLY.check(ip);
      assert.equal(verdict.allowed, false, ip);
      assert.equal(verdict.kind, kind, ip);
      assert.equal(verdict.embedded?.via, via, ip);
    }
  });

  test('IPv6 passes only as global unicast outside the special-purpose blocks', () => {
    const cases: Array<[string, string]> = [
      ['::', 'unspecified'],
      ['::1', 'loopback'],
      ['::8.8.8.8', 'IPv4-compatible (deprecated)'],
      ['::ffff:0:808:808', 'IPv4-translated'],
      ['64:ff9b:1::a00:5', 'local NAT64'],
      ['100::1', 'discard-only'],
      ['2001::1', 'Teredo'],
      ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'Teredo'],
      ['2001:2::1', 'IETF protocol assignment'],
      ['2001:10::1', 'IETF protocol assignment'],
      ['2001:db8::1', 'documentation'],
      ['3fff::1', 'documentation'],
      ['3fff:fff:ffff::1', 'documentation'],
      ['5f00::1', 'segment routing (SRv6)'],
      ['fc00::1', 'unique local (private)'],
      ['fd00:ec2::254', 'unique local (private)'],
      ['fe80::1', 'link-local'],
      ['fe80::1%eth0', 'link-local'],
      ['fec0::1', 'site-local (deprecated)'],
      ['ff02::1', 'multicast'],
      ['ff0e::1', 'multicast'],
      ['4000::1', 'reserved (not global unicast)'],
      ['8000::1', 'reserved (not global unicast)'],
      ['::5efe:808:808', 'reserved (not global unicast)'],
      ['::2', 'unspecified ("this network")'],
    ];
    for (const [ip, kind] of cases) assert.deepEqual({ allowed: PUBLIC_ONLY.check(ip).allowed, kind: PUBLIC_ONLY.check(ip).kind }, { allowed: false, kind }, ip);
    for (const ip of ['not-an-ip', '127.1', '0x7f.1', '2130706433', '::ffff:127.1', '']) assert.deepEqual(PUBLIC_ONLY.check(ip), { allowed: false, kind: 'malformed' }, ip);
  });

  test('public addresses pass, in whichever form carries them (verdict only: nothing is connected to)', () => {
    for (const ip of ['8.8.8.8', '1.1.1.1', '172.32.0.1', '192.169.0.1', '100.128.0.1', '2606:4700::1111', '[2606:4700:4700::1111]', '2a00:1450:4001::1', '2620:fe::fe', '::ffff:8.8.8.8', '::ffff:808:808', '64:ff9b::808:808', '2002:808:808::1']) {
      assert.deepEqual(PUBLIC_ONLY.check(ip), { allowed: true }, ip);
    }
  });

  test('an allowed network covers the address as written, and an IPv4-mapped address by the IPv4 address it is, but no IPv4 reached through a gateway or tunnel', () => {
    const loopback = new AddressPolicy(['127.0.0.0/8']);
    assert.deepEqual(loopback.check('::ffff:7f00:1'), { allowed: true }, 'the socket connects to 127.0.0.1 itself');
    // Through NAT64, 6to4 or the rest, 127.0.0.1 is the gateway's own loopback, not ours.
    for (const ip of ['64:ff9b::7f00:1', '2002:7f00:1::', '::7f00:1', '::ffff:0:7f00:1', '::5efe:7f00:1']) assert.equal(loopback.check(ip).allowed, false, ip);
    const nat64 = new AddressPolicy(['64:ff9b::a14:0/112']);
    assert.equal(nat64.check('64:ff9b::10.20.0.5').allowed, true, 'named as an IPv6 range, it is allowed');
    assert.equal(nat64.check('64:ff9b::10.21.0.5').allowed, false);
    assert.equal(new AddressPolicy(['fd00::/8']).check('fd00::5').allowed, true);
    assert.equal(new AddressPolicy(['10.20.0.0/16']).check('::ffff:10.20.0.1').allowed, true);
    assert.equal(new AddressPolicy(['10.20.0.0/16']).check('::ffff:10.21.0.1').allowed, false);
  });
});

describe('names resolved to every non-public range are refused at the lookup the sockets use', () => {
  // Each name resolves to one refused address; several forms would leave this
  // machine if connected to, so they are judged here, before any socket.
  const ranges: Record<string, string> = {
    'loopback.test': '127.0.0.1',
    'private-10.test': '10.0.0.5',
    'private-172.test': '172.16.0.1',
    'private-192.test': '192.168.1.1',
    'metadata.test': '169.254.169.254',
    'cgnat.test': '100.64.0.1',
    'this-network.test': '0.0.0.0',
    'multicast.test': '224.0.0.1',
    'reserved.test': '240.0.0.1',
    'broadcast.test': '255.255.255.255',
    'documentation.test': '192.0.2.1',
    'benchmarking.test': '198.18.0.1',
    'ipv6-loopback.test': '::1',
    'ipv6-unspecified.test': '::',
    'mapped.test': '::ffff:127.0.0.1',
    'mapped-metadata.test': '::ffff:169.254.169.254',
    'nat64.test': '64:ff9b::7f00:1',
    'nat64-metadata.test': '64:ff9b::a9fe:a9fe',
    'local-nat64.test': '64:ff9b:1::a00:5',
    '6to4.test': '2002:a9fe:a9fe::1',
    'compatible.test': '::127.0.0.1',
    'translated.test': '::ffff:0:a00:5',
    'isatap.test': '2606:4700::5efe:a9fe:a9fe',
    'teredo.test': '2001:0:4136:e378:8000:63bf:3fff:fdd2',
    'site-local.test': 'fec0::1',
    'ula.test': 'fd00:ec2::254',
    'link-local.test': 'fe80::1',
    'ipv6-documentation.test': '2001:db8::1',
    'new-documentation.test': '3fff::1',
    'srv6.test': '5f00::1',
    'ipv6-multicast.test': 'ff02::1',
    'ipv6-reserved.test': '4000::1',
  };
  const resolve = testResolver({
    ...Object.fromEntries(Object.entries(ranges).map(([name, ip]) => [name, [ip]])),
    'all-refused.test': ['::ffff:127.0.0.1', '64:ff9b::a9fe:a9fe', '10.0.0.5'],
    'mixed.test': ['10.0.0.5', '8.8.8.8', '64:ff9b::7f00:1', '2606:4700::1111'],
  });

  test('every range, whether the socket asks for one address or all of them', async () => {
    for (const [name, ip] of Object.entries(ranges)) {
      for (const all of [true, false]) {
        const { err, addresses } = await lookUp(resolve, PUBLIC_ONLY, name, all);
        assert.deepEqual(addresses, [], name);
        assert.equal(err?.code, 'HERALD_ADDRESS_REFUSED', name);
        assert.ok(err!.message.startsWith(`${name} resolves to a`), err!.message);
        // The kind of address, never which: that would read the operator's internal DNS to a tenant.
        assert.ok(!err!.message.includes(ip), err!.message);
        assert.match(err!.message, REFUSAL);
        assert.equal(describeTransportError(err, 10_000, { aborted: false, timedOut: false }).kind, 'address_refused', name);
      }
    }
    const nat64 = await lookUp(resolve, PUBLIC_ONLY, 'nat64-metadata.test', true);
    assert.equal(
      nat64.err?.message,
      'nat64-metadata.test resolves to an address that leads to a link-local (cloud metadata) address (NAT64); Herald delivers only to public addresses unless its operator allows that network (HERALD_ALLOWED_NETWORKS)',
    );
  });

  test('a socket is handed only the addresses that pass; a name with none left is refused', async () => {
    assert.equal((await lookUp(resolve, PUBLIC_ONLY, 'all-refused.test', true)).err?.code, 'HERALD_ADDRESS_REFUSED');
    const mixed = await lookUp(resolve, PUBLIC_ONLY, 'mixed.test', true);
    assert.deepEqual(mixed.addresses, [
      { address: '8.8.8.8', family: 4 },
      { address: '2606:4700::1111', family: 6 },
    ]);
    assert.deepEqual((await lookUp(resolve, PUBLIC_ONLY, 'mixed.test', false)).addresses, [{ address: '8.8.8.8', family: 4 }]);
    // Not in the table: not found, as DNS would say; never a real lookup.
    assert.equal((await lookUp(resolve, PUBLIC_ONLY, 'elsewhere.test', true)).err?.code, 'ENOTFOUND');
  });
});

/**
 * IP literals in every notation the URL standard accepts, each refused
 * when saved (POST) and when changed (PATCH). The WHATWG parser
 * turns decimal, octal, hex, short, full-width and percent-encoded IPv4 into
 * a dotted quad and IPv6 into its short form (::ffff:7f00:1) before the
 * policy sees it.
 */
const REFUSED_URLS: Array<[string, string?]> = [
  // IPv4 loopback, however written.
  ['https://127.0.0.1/', '127.0.0.1 is a loopback address'],
  ['https://127.0.0.1:5432/', '127.0.0.1 is a loopback address'],
  ['https://127.1/', '127.0.0.1 is a loopback address'],
  ['https://127.0.1/'],
  ['https://2130706433/', '127.0.0.1 is a loopback address'],
  ['https://0x7f000001/'],
  ['https://0x7f.1/', '127.0.0.1 is a loopback address'],
  ['https://0x7f.0.0.1/'],
  ['https://0x7F.0X0.0x0.0X1/'],
  ['https://0177.0.0.1/', '127.0.0.1 is a loopback address'],
  ['https://0177.1/'],
  ['https://017700000001/'],
  ['https://127.000.000.001/'],
  ['https://127.0.0.0x1/'],
  ['https://127.0.0.1./', '127.0.0.1 is a loopback address'],
  ['https://127.0.0.1%2e/'],
  ['https://%31%32%37.0.0.1/', '127.0.0.1 is a loopback address'],
  ['https://１２７.０.０.１/', '127.0.0.1 is a loopback address'],
  ['https://127。0。0。1/'],
  ['https://127.255.255.254/'],
  ['https://127.0.0.1\\@hooks.example.com/', '127.0.0.1 is a loopback address'],
  // This host, however written.
  ['https://0.0.0.0/', '0.0.0.0 is an unspecified ("this network") address'],
  ['https://0/', '0.0.0.0 is an unspecified'],
  ['https://0x0/'],
  ['https://0.0.0.0:443/'],
  // Private, metadata and the other special IPv4 ranges, plain and disguised.
  ['https://10.0.0.5:9200/', '10.0.0.5 is a private address'],
  ['https://012.0.0.5/', '10.0.0.5 is a private address'],
  ['https://167772165/', '10.0.0.5 is a private address'],
  ['https://169.254.169.254/latest/meta-data/', '169.254.169.254 is a link-local (cloud metadata) address'],
  ['https://2852039166/', '169.254.169.254 is a link-local'],
  ['https://0xa9fea9fe/', '169.254.169.254 is a link-local'],
  ['https://0251.0376.0251.0376/', '169.254.169.254 is a link-local'],
  ['https://172.16.0.1/'],
  ['https://172.31.255.255/'],
  ['https://192.168.1.1/', '192.168.1.1 is a private address'],
  ['https://0xc0a80101/', '192.168.1.1 is a private address'],
  ['https://100.64.0.1/', 'carrier-grade NAT'],
  ['https://192.0.0.1/'],
  ['https://192.0.2.1/', 'documentation'],
  ['https://198.18.0.1/', 'benchmarking'],
  ['https://198.51.100.1/'],
  ['https://203.0.113.1/'],
  ['https://224.0.0.1/', 'multicast'],
  ['https://239.255.255.250/'],
  ['https://240.0.0.1/', 'reserved'],
  ['https://255.255.255.255/'],
  ['https://192.88.99.1/', '6to4 relay'],
  // IPv4-mapped IPv6, however written.
  ['https://[::ffff:127.0.0.1]:5432/', '::ffff:7f00:1 leads to 127.0.0.1 (IPv4-mapped), a loopback address'],
  ['https://[::ffff:127.0.0.1]:443/', '::ffff:7f00:1 leads to 127.0.0.1 (IPv4-mapped), a loopback address'],
  ['https://[::ffff:7f00:1]/', '::ffff:7f00:1 leads to 127.0.0.1 (IPv4-mapped)'],
  ['https://[::FFFF:7F00:0001]/', '::ffff:7f00:1 leads to 127.0.0.1 (IPv4-mapped)'],
  ['https://[0:0:0:0:0:ffff:127.0.0.1]/', '::ffff:7f00:1 leads to 127.0.0.1 (IPv4-mapped)'],
  ['https://[0000:0000:0000:0000:0000:ffff:7f00:0001]/'],
  ['https://[::ffff:127.1.2.3]/'],
  ['https://[::ffff:169.254.169.254]/', '::ffff:a9fe:a9fe leads to 169.254.169.254 (IPv4-mapped), a link-local (cloud metadata) address'],
  ['https://[::ffff:a9fe:a9fe]/'],
  ['https://[::ffff:10.0.0.5]/', '::ffff:a00:5 leads to 10.0.0.5 (IPv4-mapped), a private address'],
  ['https://[::ffff:192.168.0.1]/'],
  ['https://[::ffff:0.0.0.0]/'],
  ['https://[::ffff:100.64.0.1]/'],
  // NAT64, 6to4, IPv4-compatible, IPv4-translated, ISATAP.
  ['https://[64:ff9b::a9fe:a9fe]/', '64:ff9b::a9fe:a9fe leads to 169.254.169.254 (NAT64), a link-local (cloud metadata) address'],
  ['https://[64:ff9b::169.254.169.254]/', '(NAT64)'],
  ['https://[64:ff9b::127.0.0.1]/', '64:ff9b::7f00:1 leads to 127.0.0.1 (NAT64), a loopback address'],
  ['https://[64:ff9b::10.0.0.5]/'],
  ['https://[64:ff9b:1::a00:5]/', 'local NAT64'],
  ['https://[2002:7f00:1::]/', '2002:7f00:1:: leads to 127.0.0.1 (6to4), a loopback address'],
  ['https://[2002:a9fe:a9fe::1]/', '(6to4)'],
  ['https://[2002:a00:5::]/'],
  ['https://[2002:c0a8:101::1]/'],
  ['https://[::127.0.0.1]/', '::7f00:1 leads to 127.0.0.1 (IPv4-compatible), a loopback address'],
  ['https://[::7f00:1]/'],
  ['https://[::169.254.169.254]/'],
  ['https://[::10.0.0.5]/'],
  ['https://[::8.8.8.8]/', 'IPv4-compatible (deprecated)'],
  ['https://[::ffff:0:127.0.0.1]/', '(IPv4-translated)'],
  ['https://[::ffff:0:a9fe:a9fe]/'],
  ['https://[::ffff:0:808:808]/', 'IPv4-translated'],
  ['https://[::5efe:127.0.0.1]/', '::5efe:7f00:1 leads to 127.0.0.1 (ISATAP), a loopback address'],
  ['https://[::5efe:a9fe:a9fe]/'],
  ['https://[fe80::5efe:a00:5]/'],
  ['https://[2606:4700::5efe:a00:5]/', '2606:4700::5efe:a00:5 leads to 10.0.0.5 (ISATAP), a private address'],
  ['https://[2606:4700::200:5efe:7f00:1]/'],
  // The rest of IPv6 that is not global unicast.
  ['https://[::1]/', '::1 is a loopback address'],
  ['https://[0:0:0:0:0:0:0:1]/', '::1 is a loopback address'],
  ['https://[::]/', ':: is an unspecified address'],
  ['https://[::0]/'],
  ['https://[::2]/'],
  ['https://[fe80::1]/', 'fe80::1 is a link-local address'],
  ['https://[FE80::A9FE:A9FE]/'],
  ['https://[fec0::1]/', 'fec0::1 is a site-local (deprecated) address'],
  ['https://[fc00::1]/', 'unique local (private)'],
  ['https://[fd00:ec2::254]/'],
  ['https://[fd12:3456:789a::1]/'],
  ['https://[ff02::1]/', 'multicast'],
  ['https://[ff0e::1]/'],
  ['https://[2001:db8::1]/', 'documentation'],
  ['https://[3fff::1]/', '3fff::1 is a documentation address'],
  ['https://[3fff:fff:ffff::1]/'],
  ['https://[5f00::1]/', '5f00::1 is a segment routing (SRv6) address'],
  ['https://[2001::1]/', 'Teredo'],
  ['https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/', 'Teredo'],
  ['https://[2001:2::1]/', 'IETF protocol assignment'],
  ['https://[2001:10::1]/'],
  ['https://[100::1]/', 'discard-only'],
  ['https://[4000::1]/', 'reserved (not global unicast)'],
  // localhost, however written.
  ['https://localhost/', 'localhost resolves to a loopback address'],
  ['https://LOCALHOST/'],
  ['https://localhost./'],
  ['https://LocalHost.:8443/'],
  ['https://api.localhost/', 'api.localhost resolves to a loopback address'],
  ['https://a.b.LOCALHOST./'],
  ['https://%6c%6fcalhost/', 'localhost resolves to a loopback address'],
  ['https://ⓛocalhost/'],
  // A user name in front of an address: refused (for the user name, and the address is private anyway).
  ['https://example.com@127.0.0.1/'],
  ['https://example.com:443@127.0.0.1/'],
  ['https://user:pass@[::ffff:7f00:1]/'],
  ['https://hooks.example.com@169.254.169.254/'],
];

for (const engine of ENGINES) {
  describe(`every notation refused, nothing connected [${engine}]`, () => {
    let h: TestHerald;
    let sink: Receiver;
    let names: Record<string, string[]>;
    let unused: number;

    before(async () => {
      sink = await startReceiver();
      unused = await closedPort();
      // Names that resolve to refused addresses which, let through, would
      // reach the sink or stay on this machine.
      names = {
        'loopback.test': ['127.0.0.1'],
        'loopback-2.test': ['127.0.0.2'],
        'mapped.test': ['::ffff:127.0.0.1'],
        'mapped-2.test': ['::ffff:7f00:2'],
        'this-host.test': ['0.0.0.0'],
        'mapped-this-host.test': ['::ffff:0.0.0.0'],
        'ipv6-loopback.test': ['::1'],
        'ipv6-unspecified.test': ['::'],
        'every-loopback.test': ['::ffff:127.0.0.1', '127.0.0.1', '::1'],
        'rebind.test.': ['::ffff:127.0.0.1'],
        'upper.test': ['::ffff:127.0.0.1'],
        'percent.test': ['127.0.0.1'],
      };
      h = await createTestHerald(engine, { addresses: PUBLIC_ONLY, lookup: testResolver(names) });
    });
    after(async () => {
      await h.close();
      await sink.close();
    });

    test(`${REFUSED_URLS.length} URL forms of non-public addresses: 400 invalid_url on the url field, when saved and when changed`, async () => {
      assert.ok(REFUSED_URLS.length >= 100);
      const kept = await h.api('POST', '/v1/endpoints', { url: 'https://hooks.example.com/in', event_types: ['alarm.created'] });
      assert.equal(kept.status, 201);
      for (const [url, says] of REFUSED_URLS) {
        for (const [method, path, body] of [
          ['POST', '/v1/endpoints', { url, event_types: ['alarm.created'] }],
          ['PATCH', `/v1/endpoints/${kept.json.id}`, { url }],
        ] as const) {
          const res = await h.api(method, path, body);
          assert.equal(res.status, 400, `${method} ${url}: ${JSON.stringify(res.json)}`);
          assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
          assert.equal(res.json.code, 'invalid_url', url);
          assert.equal(res.json.errors[0].field, 'url', url);
          if (says) assert.ok(res.json.errors[0].message.includes(says), `${url}: ${res.json.errors[0].message}`);
        }
      }
      // The address given with and without a port: the same words.
      const [a, b] = await Promise.all(['5432', '443'].map((port) => h.api('POST', '/v1/endpoints', { url: `https://[::ffff:127.0.0.1]:${port}/`, event_types: ['alarm.created'] })));
      assert.equal(a!.json.errors[0].message, b!.json.errors[0].message);

      const list = await h.api('GET', '/v1/endpoints');
      assert.deepEqual(list.json.data.map((e: { url: string }) => e.url), ['https://hooks.example.com/in'], 'nothing refused was stored');
      assert.equal((await h.api('DELETE', `/v1/endpoints/${kept.json.id}`)).status, 204);
      assert.equal(sink.connections, 0);
    });

    test('public addresses, in any form, can be saved (and are deleted again unsent)', async () => {
      const other = await h.newAccount('Public Forms Ltd');
      for (const url of ['https://8.8.8.8/', 'https://[2606:4700::1111]/', 'https://[::ffff:8.8.8.8]/', 'https://[64:ff9b::808:808]/', 'https://134744072/']) {
        const res = await h.api('POST', '/v1/endpoints', { url, event_types: ['alarm.created'] }, other.apiKey);
        assert.equal(res.status, 201, `${url}: ${JSON.stringify(res.json)}`);
        assert.equal((await h.api('DELETE', `/v1/endpoints/${res.json.id}`, undefined, other.apiKey)).status, 204);
      }
    });

    test('at send time, names resolving to refused addresses and endpoints saved with refused literals: test sends and deliveries fail for good, and nothing connects', async () => {
      const port = sink.port;
      const urls = [
        ...Object.keys(names).map((name) => `https://${name === 'upper.test' ? 'UPPER.test' : name === 'percent.test' ? '%70ercent.test' : name}:${port}/hooks`),
        // Saved while their network was allowed: an operator may narrow HERALD_ALLOWED_NETWORKS later.
        `https://[::ffff:127.0.0.1]:${port}/`,
        `https://[::ffff:7f00:2]:${port}/`,
        `https://127.0.0.1:${port}/`,
        `https://0.0.0.0:${port}/`,
        `https://[::ffff:0.0.0.0]:${port}/`,
        `https://[::1]:${port}/`,
        `https://[::]:${port}/`,
      ];
      const endpoints: Array<{ id: string; url: string }> = [];
      for (const url of urls) {
        const { endpoint } = await createEndpoint({ ...h.deps, addresses: ALLOW_EVERYTHING }, h.accountId, { url, event_types: ['alarm.created'] });
        endpoints.push(endpoint);
      }

      for (const endpoint of endpoints) {
        const tested = await h.api('POST', `/v1/endpoints/${endpoint.id}/test`, {});
        assert.equal(tested.status, 200);
        assert.equal(tested.json.outcome, 'failed');
        assert.equal(tested.json.status_code, null);
        assert.match(tested.json.error, REFUSAL, `${endpoint.url}: ${tested.json.error}`);
        assert.doesNotMatch(tested.json.error, new RegExp(String(port)), 'the port is not part of it');
      }

      const event = await h.api('POST', '/v1/events', { type: 'alarm.created', data: alarmData() });
      assert.equal(event.status, 202);
      const report = await h.dispatcher.tick();
      assert.deepEqual({ claimed: report.claimed, failed: report.failed, retrying: report.retrying }, { claimed: endpoints.length, failed: endpoints.length, retrying: 0 });
      for (const endpoint of endpoints) {
        const log = await h.api('GET', `/v1/endpoints/${endpoint.id}/attempts`);
        const delivery = log.json.data.find((a: { is_test: boolean }) => !a.is_test);
        assert.equal(delivery.outcome, 'failed', endpoint.url);
        assert.match(delivery.error, REFUSAL, `${endpoint.url}: ${delivery.error}`);
      }
      h.clock.advance(4 * 86_400_000);
      assert.equal((await h.dispatcher.tick()).claimed, 0, 'a refused address is not retried');
      assert.equal(sink.connections, 0, 'the sink accepted no connection');
      assert.equal(sink.requests.length, 0);

      for (const endpoint of endpoints) assert.equal((await h.api('DELETE', `/v1/endpoints/${endpoint.id}`)).status, 204);
    });

    test('a refused address reads the same whether a port is open or closed', async () => {
      const pairs = [
        ['[::ffff:127.0.0.1]', '::ffff:7f00:1 leads to 127.0.0.1 (IPv4-mapped), a loopback address'],
        ['127.0.0.1', '127.0.0.1 is a loopback address'],
        ['mapped.test', 'mapped.test resolves to an address that leads to a loopback address (IPv4-mapped)'],
      ];
      for (const [host, says] of pairs) {
        const errors: string[] = [];
        for (const port of [sink.port, unused]) {
          const { endpoint } = await createEndpoint({ ...h.deps, addresses: ALLOW_EVERYTHING }, h.accountId, { url: `https://${host}:${port}/`, event_types: ['alarm.created'] });
          const tested = await h.api('POST', `/v1/endpoints/${endpoint.id}/test`, {});
          errors.push(tested.json.error);
          assert.equal((await h.api('DELETE', `/v1/endpoints/${endpoint.id}`)).status, 204);
        }
        assert.equal(errors[0], errors[1], host);
        assert.ok(errors[0]!.startsWith(`${says}; Herald delivers only to public addresses`), errors[0]);
      }
      assert.equal(sink.connections, 0);
    });

    test('control: let through, those same addresses do reach the sink', async () => {
      // What shows that "no connection" above came from the policy, not from
      // addresses that could not have been reached anyway.
      const agent = createAgent({ connections: 1, addresses: ALLOW_EVERYTHING, timeoutMs: 5_000, connect: { ca: TLS.ca }, lookup: testResolver(names) });
      try {
        // IPv4-mapped addresses need an IPv6 socket, which a host without IPv6 cannot open.
        const ipv6 = Object.values(networkInterfaces()).some((list) => list?.some((i) => i.address === '::1'));
        const reachable = ['loopback.test', '127.0.0.1', 'every-loopback.test', ...(ipv6 ? ['mapped.test', 'rebind.test.', '[::ffff:127.0.0.1]'] : [])];
        for (const host of reachable) {
          const before = sink.connections;
          await sendAttempt(agent, { url: `https://${host}:${sink.port}/`, headers: {}, body: Buffer.from('{}'), timeoutMs: 5_000 });
          assert.ok(sink.connections > before, `${host} reached the sink`);
        }
      } finally {
        await agent.close();
      }
    });
  });
}
