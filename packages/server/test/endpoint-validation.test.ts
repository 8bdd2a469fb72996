import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ENGINES } from './helpers/engines.ts';
import { createTestHerald, type TestHerald } from './helpers/herald.ts';
import { assertProblem } from './helpers/problem.ts';

const GOOD = { url: 'https://hooks.example.com/herald', event_types: ['alarm.created'] };

for (const engine of ENGINES) {
  describe(`endpoint addresses and subscriptions are validated [${engine}]`, () => {
    let h: TestHerald;
    let existing: string;
    before(async () => {
      h = await createTestHerald(engine);
      existing = (await h.api('POST', '/v1/endpoints', GOOD)).json.id;
    });
    after(async () => {
      const { rows } = await h.db.query<{ n: number }>('SELECT count(*)::int AS n FROM endpoints');
      assert.equal(rows[0]!.n, 1, 'no rejected request stored an endpoint');
      await h.close();
    });

    const create = (body: unknown) => h.api('POST', '/v1/endpoints', body);

    test('an http address is refused with invalid_url, naming url and the https form to use', async () => {
      const res = await create({ ...GOOD, url: 'http://hooks.example.com/herald' });
      assertProblem(res, 'invalid_url', 'url');
      assert.match(res.json.detail, /https/);
      assert.match(res.json.detail, /https:\/\/hooks\.example\.com\/herald/);
    });

    const invalidUrls: Array<[string, unknown]> = [
      ['not a URL at all', 'hooks dot example'],
      ['no scheme', 'hooks.example.com/herald'],
      ['a relative path', '/webhooks'],
      ['another scheme', 'ftp://hooks.example.com/'],
      ['javascript', 'javascript:alert(1)'],
      ['credentials', 'https://user:pass@hooks.example.com/herald'],
      ['a user name only', 'https://user@hooks.example.com/herald'],
      ['a fragment', 'https://hooks.example.com/herald#section'],
      ['blank', '   '],
      ['too long', `https://hooks.example.com/${'a'.repeat(2100)}`],
    ];
    for (const [what, url] of invalidUrls) {
      test(`an address with ${what} is refused with invalid_url`, async () => {
        assertProblem(await create({ ...GOOD, url }), 'invalid_url', 'url');
      });
    }

    test('the credentials message says why they are refused', async () => {
      const res = await create({ ...GOOD, url: 'https://user:pass@hooks.example.com/' });
      assert.match(res.json.detail, /user name or password/);
      assert.ok(!res.json.detail.includes('pass@'), 'the password is not echoed');
    });

    test('a url that is not a string is a validation error on url', async () => {
      assertProblem(await create({ ...GOOD, url: 42 }), 'validation_failed', 'url');
    });

    test('a missing url or event_types is named', async () => {
      assertProblem(await create({ event_types: ['alarm.created'] }), 'validation_failed', 'url');
      assertProblem(await create({ url: GOOD.url }), 'validation_failed', 'event_types');
    });

    test('unknown event types are refused with unknown_event_type, each named, with where to find the catalog', async () => {
      const res = await create({ ...GOOD, event_types: ['alarm.created', 'alarm.exploded', 'shipment.lost'] });
      assertProblem(res, 'unknown_event_type', 'event_types');
      assert.match(res.json.detail, /"alarm\.exploded"/);
      assert.match(res.json.detail, /"shipment\.lost"/);
      assert.ok(!res.json.detail.includes('"alarm.created"'));
      assert.match(res.json.detail, /GET \/v1\/event-types/);
    });

    test('an empty event_types list is refused', async () => {
      assertProblem(await create({ ...GOOD, event_types: [] }), 'validation_failed', 'event_types');
    });

    test('event_types that are not strings are refused, naming the item', async () => {
      assertProblem(await create({ ...GOOD, event_types: ['alarm.created', 7] }), 'validation_failed', 'event_types[1]');
      assertProblem(await create({ ...GOOD, event_types: 'alarm.created' }), 'validation_failed', 'event_types');
    });

    test('an unknown body field is refused, naming it', async () => {
      const res = await create({ ...GOOD, secret: 'whsec_mine' });
      assertProblem(res, 'validation_failed', 'secret');
      assert.match(res.json.detail, /not a known field/);
    });

    test('a description over 500 characters is refused', async () => {
      assertProblem(await create({ ...GOOD, description: 'x'.repeat(501) }), 'validation_failed', 'description');
    });

    test('update validates the same way and changes nothing when it refuses', async () => {
      assertProblem(await h.api('PATCH', `/v1/endpoints/${existing}`, { url: 'http://hooks.example.com/' }), 'invalid_url', 'url');
      assertProblem(await h.api('PATCH', `/v1/endpoints/${existing}`, { event_types: ['nope.nope'] }), 'unknown_event_type', 'event_types');
      assertProblem(await h.api('PATCH', `/v1/endpoints/${existing}`, { event_types: [] }), 'validation_failed', 'event_types');
      assertProblem(await h.api('PATCH', `/v1/endpoints/${existing}`, { enabled: true }), 'validation_failed', 'enabled');
      assertProblem(await h.api('PATCH', `/v1/endpoints/${existing}`, { url: null }), 'validation_failed', 'url');
      const got = await h.api('GET', `/v1/endpoints/${existing}`);
      assert.equal(got.json.url, GOOD.url);
      assert.deepEqual(got.json.event_types, GOOD.event_types);
    });

    test('an id that is not a UUID is refused before any lookup', async () => {
      for (const method of ['GET', 'PATCH', 'DELETE']) {
        const res = await h.api(method, '/v1/endpoints/12345', method === 'PATCH' ? {} : undefined);
        assertProblem(res, 'validation_failed', 'id');
      }
    });

    test('list paging parameters are validated', async () => {
      assertProblem(await h.api('GET', '/v1/endpoints?limit=0'), 'validation_failed', 'query.limit');
      assertProblem(await h.api('GET', '/v1/endpoints?limit=101'), 'validation_failed', 'query.limit');
      assertProblem(await h.api('GET', '/v1/endpoints?limit=ten'), 'validation_failed', 'query.limit');
      assertProblem(await h.api('GET', '/v1/endpoints?cursor=page2'), 'validation_failed', 'query.cursor');
      assertProblem(await h.api('GET', '/v1/endpoints?page=2'), 'validation_failed', 'query.page');
    });
  });
}
