import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { AddressPolicy } from '../src/core/address-policy.ts';
import { loadConfig } from '../src/config.ts';
import { createEndpoint } from '../src/services/endpoints.ts';
import { ENGINES } from './helpers/engines.ts';
import { alarmData, createTestDispatcher, createTestHerald, TEST_ADDRESSES, testDispatcherConfig, type TestHerald } from './helpers/herald.ts';
import { startReceiver, type Receiver } from './helpers/receiver.ts';

const PUBLIC_ONLY = AddressPolicy.PUBLIC_ONLY;

describe('address policy', () => {
  test('refuses every non-public range, IPv4 and IPv6, and says what kind of address it is', () => {
    const refused: Array<[string, string]> = [
      ['127.0.0.1', 'loopback'],
      ['127.255.0.9', 'loopback'],
      ['10.1.2.3', 'private'],
      ['172.16.0.1', 'private'],
      ['172.31.255.255', 'private'],
      ['192.168.1.10', 'private'],
      ['169.254.169.254', 'link-local (cloud metadata)'],
      ['100.64.0.1', 'carrier-grade NAT'],
      ['0.0.0.0', 'unspecified ("this network")'],
      ['224.0.0.1', 'multicast'],
      ['255.255.255.255', 'reserved'],
      ['::1', 'loopback'],
      ['::', 'unspecified'],
      ['fd12:3456::1', 'unique local (private)'],
      ['fe80::1', 'link-local'],
      ['ff02::1', 'multicast'],
      // An IPv4 address dressed as IPv6 is judged as IPv4.
      ['::ffff:127.0.0.1', 'loopback'],
      ['::ffff:10.0.0.5', 'private'],
      ['[::1]', 'loopback'],
    ];
    for (const [ip, kind] of refused) assert.equal(PUBLIC_ONLY.check(ip).kind, kind, ip);
    for (const [ip] of refused) assert.equal(PUBLIC_ONLY.check(ip).allowed, false, ip);
    assert.deepEqual(PUBLIC_ONLY.check('::ffff:10.0.0.5'), { allowed: false, kind: 'private', embedded: { ipv4: '10.0.0.5', via: 'IPv4-mapped' } });
    for (const ip of ['8.8.8.8', '172.32.0.1', '192.169.0.1', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8']) {
      assert.deepEqual(PUBLIC_ONLY.check(ip), { allowed: true }, ip);
    }
    assert.equal(PUBLIC_ONLY.check('not-an-ip').allowed, false);
  });

  test('networks the operator allows are allowed, and only those', () => {
    const policy = new AddressPolicy(['10.20.0.0/16', 'fd00::/8', '127.0.0.1']);
    assert.equal(policy.check('10.20.3.4').allowed, true);
    assert.equal(policy.check('10.21.0.1').allowed, false);
    assert.equal(policy.check('fd00::5').allowed, true);
    assert.equal(policy.check('::ffff:10.20.0.1').allowed, true);
    assert.equal(policy.check('127.0.0.1').allowed, true);
    assert.equal(policy.check('127.0.0.2').allowed, false);
    assert.deepEqual(policy.allowedNetworks, ['10.20.0.0/16', 'fd00::/8', '127.0.0.1/32']);
  });

  test('HERALD_ALLOWED_NETWORKS: empty by default; a list of CIDR ranges; a bad entry stops Herald naming the setting', () => {
    assert.deepEqual(loadConfig({ env: {} }).allowedNetworks, []);
    assert.deepEqual(loadConfig({ env: { HERALD_ALLOWED_NETWORKS: '10.0.0.0/8, fd00::/8 127.0.0.1' } }).allowedNetworks, ['10.0.0.0/8', 'fd00::/8', '127.0.0.1/32']);
    assert.throws(() => loadConfig({ env: { HERALD_ALLOWED_NETWORKS: '10.0.0.0/33' } }), /HERALD_ALLOWED_NETWORKS: "10.0.0.0\/33": the prefix length must be a whole number from 0 to 32/);
    assert.throws(() => loadConfig({ env: { HERALD_ALLOWED_NETWORKS: 'intranet' } }), /HERALD_ALLOWED_NETWORKS: "intranet" is not a network; write it as an address and a prefix length/);
  });
});

for (const engine of ENGINES) {
  describe(`outbound addresses: public only unless allowed [${engine}]`, () => {
    let h: TestHerald;
    let receiver: Receiver;

    before(async () => {
      // The API and its test sends refuse non-public addresses, as a default Herald does.
      h = await createTestHerald(engine, { addresses: PUBLIC_ONLY });
      receiver = await startReceiver();
    });
    after(async () => {
      await h.close();
      await receiver.close();
    });

    test('an endpoint at a private, loopback or metadata address is refused when saved, saying why and what the operator can do', async () => {
      for (const [url, says] of [
        ['https://127.0.0.1/hooks', '127.0.0.1 is a loopback address'],
        ['https://localhost:8443/hooks', 'localhost resolves to a loopback address'],
        ['https://api.localhost/hooks', 'api.localhost resolves to a loopback address'],
        ['https://[::1]/hooks', '::1 is a loopback address'],
        ['https://10.0.0.5:9200/', '10.0.0.5 is a private address'],
        ['https://169.254.169.254/latest/meta-data/', '169.254.169.254 is a link-local (cloud metadata) address'],
        ['https://[fd00::1]/', 'fd00::1 is a unique local (private) address'],
      ]) {
        const res = await h.api('POST', '/v1/endpoints', { url, event_types: ['alarm.created'] });
        assert.equal(res.status, 400, url);
        assert.equal(res.json.code, 'invalid_url', url);
        assert.equal(res.json.errors[0].field, 'url');
        assert.ok(res.json.errors[0].message.includes(says), `${url}: ${res.json.errors[0].message}`);
        assert.match(res.json.errors[0].message, /HERALD_ALLOWED_NETWORKS/);
      }
      // Changing an address is checked the same way.
      const ok = await h.api('POST', '/v1/endpoints', { url: 'https://hooks.example.com/in', event_types: ['alarm.created'] });
      assert.equal(ok.status, 201);
      const patch = await h.api('PATCH', `/v1/endpoints/${ok.json.id}`, { url: 'https://192.168.0.10/in' });
      assert.equal(patch.status, 400);
      assert.equal(patch.json.code, 'invalid_url');
      const list = await h.api('GET', '/v1/endpoints');
      assert.deepEqual(
        list.json.data.map((e: { url: string }) => e.url),
        ['https://hooks.example.com/in'],
        'nothing refused was stored',
      );
      assert.equal((await h.api('DELETE', `/v1/endpoints/${ok.json.id}`)).status, 204);
    });

    test('a name that resolves to a refused address is caught when connecting: nothing is sent, the attempt says why', async () => {
      // Saved while loopback was allowed (as if the name resolved elsewhere then).
      const byName = await createEndpoint({ ...h.deps, addresses: TEST_ADDRESSES }, h.accountId, { url: receiver.url, event_types: ['alarm.created'] });
      const byIp = await createEndpoint({ ...h.deps, addresses: TEST_ADDRESSES }, h.accountId, {
        url: receiver.url.replace('localhost', '127.0.0.1'),
        event_types: ['alarm.created'],
      });
      receiver.requests.length = 0;

      // The synchronous test send goes through the same guard.
      const tested = await h.api('POST', `/v1/endpoints/${byName.endpoint.id}/test`, {});
      assert.equal(tested.status, 200);
      assert.equal(tested.json.status_code, null);
      assert.match(tested.json.error, /^localhost resolves to a loopback address; Herald delivers only to public addresses/);

      const event = await h.api('POST', '/v1/events', { type: 'alarm.created', data: alarmData() });
      assert.equal(event.status, 202);
      const report = await h.dispatcher.tick();
      assert.equal(report.claimed, 2);
      assert.equal(receiver.requests.length, 0, 'nothing reached the receiver');

      // A permanent failure, at the first attempt: asking the policy again would get the same answer.
      assert.equal(report.failed, 2);
      const log = await h.api('GET', `/v1/endpoints/${byName.endpoint.id}/attempts`);
      const delivery = log.json.data.find((a: { is_test: boolean }) => !a.is_test);
      assert.equal(delivery.outcome, 'failed');
      assert.match(delivery.error, /^localhost resolves to a loopback address; Herald delivers only to public addresses unless its operator allows that network \(HERALD_ALLOWED_NETWORKS\)$/);
      const logIp = await h.api('GET', `/v1/endpoints/${byIp.endpoint.id}/attempts`);
      assert.equal(logIp.json.data[0].outcome, 'failed');
      assert.match(logIp.json.data[0].error, /^127\.0\.0\.1 is a loopback address; Herald delivers only to public addresses/);
      h.clock.advance(4 * 86_400_000);
      assert.equal((await h.dispatcher.tick()).claimed, 0, 'nothing is retried');

      // Once the operator allows the network, a redelivery goes through.
      const allowing = createTestDispatcher(h, testDispatcherConfig());
      try {
        for (const endpoint of [byName.endpoint, byIp.endpoint]) {
          assert.equal((await h.api('POST', `/v1/events/${event.json.id}/redeliver`, { endpoint_id: endpoint.id })).status, 202);
        }
        const redelivered = await allowing.tick();
        assert.equal(redelivered.succeeded, 2);
        assert.equal(receiver.requests.length, 2);
      } finally {
        await allowing.stop();
      }
    });
  });
}
