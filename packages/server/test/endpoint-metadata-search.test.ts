import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ENGINES } from './helpers/engines.ts';
import { createTestHerald, type TestHerald } from './helpers/herald.ts';

for (const engine of ENGINES) {
  describe(`endpoint description, metadata and list search [${engine}]`, () => {
    let h: TestHerald;

    before(async () => {
      h = await createTestHerald(engine);
    });
    after(async () => {
      await h.close();
    });

    const create = (body: Record<string, unknown>) => h.api('POST', '/v1/endpoints', { event_types: ['alarm.created'], ...body });

    test('metadata is stored, returned, replaced whole on update and left as it is when left out', async () => {
      const created = await create({ url: 'https://meta.example.com/a', description: 'Billing hooks', metadata: { team: 'billing', region: 'eu' } });
      assert.equal(created.status, 201);
      assert.deepEqual(created.json.metadata, { team: 'billing', region: 'eu' });
      const plain = await create({ url: 'https://meta.example.com/b' });
      assert.deepEqual(plain.json.metadata, {}, 'none is {}');
      assert.equal(plain.json.description, '');
      const id = created.json.id;
      const kept = await h.api('PATCH', `/v1/endpoints/${id}`, { description: 'Billing, EU' });
      assert.deepEqual(kept.json.metadata, { team: 'billing', region: 'eu' });
      const replaced = await h.api('PATCH', `/v1/endpoints/${id}`, { metadata: { team: 'payments' } });
      assert.deepEqual(replaced.json.metadata, { team: 'payments' });
      assert.equal(replaced.json.description, 'Billing, EU', 'left out, kept');
      const got = await h.api('GET', `/v1/endpoints/${id}`);
      assert.deepEqual(got.json.metadata, { team: 'payments' });
      const cleared = await h.api('PATCH', `/v1/endpoints/${id}`, { metadata: {} });
      assert.deepEqual(cleared.json.metadata, {});
      for (const e of [id, plain.json.id]) await h.api('DELETE', `/v1/endpoints/${e}`);
    });

    test('metadata and description are bounded, each refusal naming the field', async () => {
      const refuse = async (body: Record<string, unknown>, field: string, pattern: RegExp) => {
        const res = await create({ url: 'https://meta.example.com/x', ...body });
        assert.equal(res.status, 400, JSON.stringify(body).slice(0, 80));
        assert.equal(res.json.code, 'validation_failed');
        assert.equal(res.json.errors[0].field, field);
        assert.match(res.json.detail, pattern);
      };
      await refuse({ metadata: { team: 7 } }, 'metadata.team', /must be a string of at most 500 characters/);
      await refuse({ metadata: { team: 'x'.repeat(501) } }, 'metadata.team', /at most 500/);
      await refuse({ metadata: { ['k'.repeat(41)]: 'v' } }, 'metadata', /1 to 40 characters without square brackets/);
      await refuse({ metadata: { 'a[b]': 'v' } }, 'metadata', /without square brackets/);
      await refuse({ metadata: { '': 'v' } }, 'metadata', /1 to 40 characters/);
      await refuse({ metadata: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, 'v'])) }, 'metadata', /has 51 keys; an endpoint may have at most 50/);
      const arr = await create({ url: 'https://meta.example.com/x', metadata: ['a'] });
      assert.equal(arr.status, 400);
      const nul = await create({ url: 'https://meta.example.com/x', metadata: null });
      assert.equal(nul.status, 400);
      await refuse({ description: 'd'.repeat(501) }, 'description', /500 characters/);
    });

    test('search matches URL or description, ignoring case; metadata[key]=value filters exactly; pages follow on', async () => {
      const other = await h.newAccount('other');
      await h.api('POST', '/v1/endpoints', { url: 'https://acme.example.com/other-account', event_types: ['alarm.created'], metadata: { team: 'billing' } }, other.apiKey);
      const ids: string[] = [];
      for (let i = 0; i < 7; i++) {
        const res = await create({
          url: i % 2 === 0 ? `https://ACME.example.com/hooks/${i}` : `https://other.example.com/hooks/${i}`,
          description: i === 3 ? 'Forwarded to Acme 100%_ off' : `number ${i}`,
          metadata: { team: i < 4 ? 'billing' : 'ops', n: String(i) },
        });
        assert.equal(res.status, 201);
        ids.push(res.json.id);
      }
      const list = async (query: string) => {
        const res = await h.api('GET', `/v1/endpoints?${query}`);
        assert.equal(res.status, 200, JSON.stringify(res.json));
        return res.json as { data: Array<{ id: string }>; next_cursor: string | null };
      };
      const idsOf = (page: { data: Array<{ id: string }> }) => page.data.map((e) => e.id);
      assert.deepEqual(idsOf(await list('search=acme&limit=100')), [ids[0], ids[2], ids[3], ids[4], ids[6]], 'URL or description, any case, this account only');
      assert.deepEqual(idsOf(await list('search=100%25_&limit=100')), [ids[3]], '% and _ are plain characters');
      assert.deepEqual(idsOf(await list('metadata[team]=billing&limit=100')), ids.slice(0, 4));
      assert.deepEqual(idsOf(await list('metadata[team]=billing&metadata[n]=2')), [ids[2]], 'every pair must match');
      assert.deepEqual(idsOf(await list('metadata[team]=Billing')), [], 'values match exactly');
      assert.deepEqual(idsOf(await list('search=acme&metadata[team]=ops')), [ids[4], ids[6]]);
      assert.deepEqual(idsOf(await list('search=nothing-like-this')), []);

      // Two at a time through a filtered list: every match once, in order.
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const page: { data: Array<{ id: string }>; next_cursor: string | null } = await list(`search=acme&limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
        assert.ok(page.data.length <= 2);
        seen.push(...idsOf(page));
        cursor = page.next_cursor;
      } while (cursor);
      assert.deepEqual(seen, [ids[0], ids[2], ids[3], ids[4], ids[6]]);
      for (const id of ids) await h.api('DELETE', `/v1/endpoints/${id}`);
    });

    test('a filter the list cannot take is a 400 naming it', async () => {
      const unknown = await h.api('GET', '/v1/endpoints?colour=red');
      assert.equal(unknown.status, 400);
      const twice = await h.api('GET', '/v1/endpoints?metadata[team]=a&metadata[team]=b');
      assert.equal(twice.status, 400);
      const long = await h.api('GET', `/v1/endpoints?search=${'s'.repeat(201)}`);
      assert.equal(long.status, 400);
      assert.match(JSON.stringify(long.json.errors), /query\.search/);
    });
  });
}
