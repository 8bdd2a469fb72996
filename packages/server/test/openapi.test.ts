import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Validator } from '@seriousme/openapi-schema-validator';
import { openApiDocument, openApiText } from '../src/http/openapi.ts';
import { createTestHerald } from './helpers/herald.ts';

const COMMITTED = new URL('../../../docs/openapi.json', import.meta.url);

describe('the OpenAPI document', () => {
  test('the committed docs/openapi.json is what the server serves (run `npm run openapi` after changing a route)', async () => {
    const generated = openApiText(await openApiDocument());
    assert.ok(readFileSync(COMMITTED, 'utf8') === generated, 'docs/openapi.json is stale: run `npm run openapi` and commit it');
  });

  test('it is a valid OpenAPI 3.1 document', async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(await openApiDocument()) as Parameters<Validator['validate']>[0]);
    assert.equal(validator.version, '3.1');
    assert.ok(result.valid, JSON.stringify(result.errors, null, 2));
  });

  test('every operation has an id, a summary, a tag, the auth errors and the rate limit', async () => {
    const doc = (await openApiDocument()) as {
      paths: Record<string, Record<string, { operationId?: string; summary?: string; tags?: string[]; responses: Record<string, unknown>; security?: unknown[] }>>;
    };
    const ids = new Set<string>();
    for (const [path, operations] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(operations)) {
        const where = `${method.toUpperCase()} ${path}`;
        assert.ok(op.operationId && !ids.has(op.operationId), `${where}: a unique operationId`);
        ids.add(op.operationId);
        assert.ok(op.summary, `${where}: a summary`);
        assert.ok(op.tags?.length, `${where}: a tag`);
        if (path.startsWith('/v1/')) {
          assert.ok(op.responses['429'], `${where}: documents 429`);
          // Operations under the document's security (an API key or a panel session) can be refused.
          if (!op.security) assert.ok(op.responses['401'], `${where}: documents 401`);
        }
      }
    }
    assert.ok(ids.size >= 18);
  });

  test('/openapi.json and the /docs reference are served without a key, every asset from Herald', async () => {
    // With the panel served, as `herald start` does: its pages are not API operations.
    const h = await createTestHerald('pglite', { panel: { root: fileURLToPath(new URL('../../panel/dist', import.meta.url)) } });
    try {
      const doc = await h.app.inject({ method: 'GET', url: '/openapi.json' });
      assert.equal(doc.statusCode, 200);
      assert.deepEqual(doc.json(), await openApiDocument());
      const page = await h.app.inject({ method: 'GET', url: '/docs/' });
      assert.equal(page.statusCode, 200);
      assert.match(page.headers['content-type'] as string, /text\/html/);
      assert.doesNotMatch(page.body, /https?:\/\//, 'no asset from another origin');
      const csp = String(page.headers['content-security-policy']);
      assert.match(csp, /default-src 'self'/);
      assert.doesNotMatch(csp, /https?:|swagger\.io/);
      assert.match(page.body, /<title>Herald API reference<\/title>/);
      const assets = [...page.body.matchAll(/(?:src|href)="\.\/([^"]+)"/g)].map((m) => m[1]!);
      assert.ok(assets.length >= 3);
      for (const asset of assets) {
        const res = await h.app.inject({ method: 'GET', url: `/docs/${asset}` });
        assert.equal(res.statusCode, 200, asset);
      }
    } finally {
      await h.close();
    }
  });
});
