import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ERRORS, type ErrorCode } from '../src/errors.ts';
import { ENGINES } from './helpers/engines.ts';
import { createTestHerald, type TestHerald } from './helpers/herald.ts';
import { OpenApiChecker } from './helpers/openapi-check.ts';

/**
 * Every route of the OpenAPI document, and a few that are not in it, called
 * with what a careless or hostile client sends: malformed and deep JSON, wrong
 * types, NUL and lone surrogates, long strings, other content types, odd path
 * parameters and query strings, with and without a key. Herald must never
 * answer 5xx, every error must be a problem with a stable code (a
 * validation error naming its fields), and every answer must be one the
 * document lists. A fixed seed and number of runs keep it repeatable and short.
 */
const RUNS = Number(process.env.FUZZ_RUNS ?? 400);
const SEED = Number(process.env.FUZZ_SEED ?? 20261126);

interface Operation {
  method: string;
  template: string;
  params: string[];
  query: string[];
  bodyFields: string[];
}

/** A string encoded for a URL, with lone surrogates as the CESU-8 bytes a client might send. */
const encode = (s: string) =>
  Array.from(s)
    .map((ch) => {
      try {
        return encodeURIComponent(ch);
      } catch {
        return '%ED%A0%80';
      }
    })
    .join('');

const nested = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;

const oddText = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.string({ unit: 'binary', maxLength: 8 }),
  fc.constantFrom('', '\u0000', 'a\u0000b', '\ud800', 'x\udfffy', '..', '../..', ' ', 'null', 'true', '0', '-1', '1e309', '9'.repeat(40), '😀', 'Ünïcödé'),
  fc.constant('a'.repeat(5000)),
  fc.uuid(),
);

for (const engine of ENGINES) {
  describe(`fuzzing every route: never a 5xx, every error a documented problem [${engine}]`, () => {
    let h: TestHerald;
    let openApi: OpenApiChecker;
    let operations: Operation[];
    const known: Record<string, string> = {};
    let otherKey: string;

    before(async () => {
      h = await createTestHerald(engine);
      otherKey = (await h.newAccount('Other')).apiKey;
      // Things that exist, so that some fuzzed requests get past the 404.
      // Port 1 refuses at once: a test event sent there costs nothing.
      known.endpoint = (await h.api('POST', '/v1/endpoints', { url: 'https://127.0.0.1:1/hook', event_types: ['alarm.created', 'shipment.created'] })).json.id;
      known.event = (await h.api('POST', '/v1/events', { type: 'shipment.created', data: { id: 1 } })).json.id;
      known.attempt = (await h.api('POST', `/v1/endpoints/${known.endpoint}/test`, {})).json.attempt?.id ?? known.event;
      known.key = (await h.api('POST', '/v1/api-keys', { name: 'fuzz target' })).json.id;
      const doc = (await h.app.inject({ method: 'GET', url: '/openapi.json' })).json();
      openApi = new OpenApiChecker(doc);
      operations = [];
      for (const [template, item] of Object.entries<Record<string, any>>(doc.paths)) {
        for (const [method, op] of Object.entries<any>(item)) {
          const parameters: Array<{ in: string; name: string }> = op.parameters ?? [];
          operations.push({
            method: method.toUpperCase(),
            template,
            params: parameters.filter((p) => p.in === 'path').map((p) => p.name),
            query: parameters.filter((p) => p.in === 'query').map((p) => p.name),
            bodyFields: Object.keys(op.requestBody?.content?.['application/json']?.schema?.properties ?? {}),
          });
        }
      }
      for (const url of ['/docs', '/docs/json', '/docs/static/nothing.js', '/nothing', '/v1', '/v1/endpoints/x/y/z']) {
        operations.push({ method: 'GET', template: url, params: [], query: [], bodyFields: [] });
      }
    });
    after(async () => {
      await h.close();
    });

    test('the document has every route', () => {
      assert.ok(operations.length > 25, String(operations.length));
    });

    test(`${RUNS} requests, seed ${SEED}`, async () => {
      const good: Record<string, unknown> = {
        url: 'https://127.0.0.1:1/hook',
        event_types: ['alarm.created'],
        description: 'fuzz',
        type: 'shipment.created',
        data: { id: 1 },
        events: [{ type: 'shipment.created', data: { id: 2 } }],
        endpoint_id: known.endpoint,
        email: 'ada@acme.example',
        password: 'correct horse battery staple',
        name: 'Ada',
        account_name: 'Acme',
        since: '2026-11-20T00:00:00Z',
        dry_run: true,
        reason: 'maintenance',
      };
      const value = (field: string) =>
        fc.oneof(
          { arbitrary: fc.constant(good[field] ?? 'x'), weight: 4 },
          fc.jsonValue({ maxDepth: 3 }),
          oddText,
          fc.constant(null),
          fc.array(oddText, { maxLength: 3 }),
          fc.integer(),
          fc.integer({ min: 1, max: 200 }).map((n) => JSON.parse(nested(n)) as unknown),
        );
      const objectBody = (fields: string[]) =>
        fc
          .tuple(
            fc.record(Object.fromEntries(fields.map((f) => [f, value(f)])), { requiredKeys: [] }),
            fc.dictionary(oddText, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 2 }),
            fc.boolean(),
          )
          .map(([known, extra, withExtra]) => JSON.stringify(withExtra ? { ...extra, ...known } : known));
      const body = (fields: string[]) =>
        fc.oneof(
          { arbitrary: fc.constant(undefined), weight: 2 },
          { arbitrary: objectBody(fields), weight: 6 },
          fc.json({ maxDepth: 3 }),
          fc.string({ maxLength: 40 }),
          fc.integer({ min: 60, max: 20_000 }).map(nested),
          fc.integer({ min: 60, max: 20_000 }).map((n) => `{"type": "shipment.created", "data": {"id": 1, "x": ${nested(n)}}}`),
          fc.constantFrom('{"__proto__": {"admin": true}}', '{"constructor": {"prototype": {}}}', '{"a": "\\u0000"}', '{"\\ud800": 1}', '{', '', 'null'),
          fc.constant(Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d])),
          fc.constant(`{"type": "shipment.created", "data": {"id": 1, "notes": "${'x'.repeat(1024 * 1024)}"}}`),
        );
      const param = (name: string) =>
        fc.oneof(
          { arbitrary: fc.constantFrom(known.endpoint!, known.event!, known.attempt!, known.key!, 'alarm.created'), weight: 3 },
          oddText.map(encode),
          fc.constantFrom('%00', '%E0%A4%A', '%ED%A0%80', '%FF', '%', 'a'.repeat(300), name),
        );
      const query = (names: string[]) =>
        fc
          .tuple(
            fc.array(
              fc.tuple(
                fc.oneof(fc.constantFrom(...names, 'limit', 'cursor', 'type', 'since', 'outcome'), oddText),
                fc.oneof(oddText, fc.constantFrom('1', '20', '101', '0', 'abc', '2026-11-22T00:00:00Z', 'alarm.created,', 'retrying,failed')),
              ),
              { maxLength: 4 },
            ),
            fc.constantFrom('', '', '&%00=1', '&a=%FF', '&&&', '&=', '&a[b]=1', '&limit=1&limit=2', '&type=%ED%A0%80'),
          )
          .map(([pairs, raw]) => {
            const q = pairs.map(([k, v]) => `${encode(k)}=${encode(v)}`).join('&') + raw;
            return q === '' ? '' : `?${q}`;
          });
      const request = fc
        .constantFrom(...operations)
        .chain((op) =>
          fc.record({
            method: fc.oneof({ arbitrary: fc.constant(op.method), weight: 9 }, fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS')),
            path: fc.tuple(...op.params.map(param)).map((values) => op.params.reduce((url, name, i) => url.replace(`{${name}}`, values[i]!), op.template)),
            query: query(op.query),
            body: body(op.bodyFields),
            contentType: fc.oneof(
              { arbitrary: fc.constant('application/json'), weight: 6 },
              fc.constantFrom(undefined, 'application/json; charset=utf-8', 'text/plain', 'application/x-www-form-urlencoded', 'application/problem+json', 'multipart/form-data; boundary=x', 'application/json; charset=latin1', 'application/jsonx', 'APPLICATION/JSON', ';'),
            ),
            auth: fc.constantFrom('key', 'key', 'key', 'none', 'junk', 'other'),
            idempotencyKey: fc.option(fc.string({ maxLength: 300 }), { freq: 4 }),
          }),
        );

      await fc.assert(
        fc.asyncProperty(request, async (r) => {
          const headers: Record<string, string> = {};
          if (r.auth === 'key') headers.authorization = `Bearer ${h.apiKey}`;
          if (r.auth === 'other') headers.authorization = `Bearer ${otherKey}`;
          if (r.auth === 'junk') headers.authorization = 'Bearer hk_12345678_' + 'x'.repeat(32);
          if (r.contentType !== undefined && r.body !== undefined) headers['content-type'] = r.contentType;
          if (r.idempotencyKey !== null) headers['idempotency-key'] = r.idempotencyKey;
          const url = `${r.path}${r.query}`;
          const res = await h.app.inject({ method: r.method as 'GET', url, headers, ...(r.body === undefined ? {} : { payload: r.body }) });
          const what = `${r.method} ${url.slice(0, 200)} → ${res.statusCode} ${res.body.slice(0, 300)}`;
          assert.ok(res.statusCode < 500, what);
          if (res.statusCode >= 400) {
            assert.match(String(res.headers['content-type']), /^application\/problem\+json; charset=utf-8$/, what);
            const problem = res.json();
            assert.ok(problem.code in ERRORS, what);
            assert.equal(ERRORS[problem.code as ErrorCode].status, res.statusCode, what);
            assert.equal(problem.status, res.statusCode, what);
            assert.equal(problem.type, `https://herald.dev/problems/${problem.code}`, what);
            assert.equal(problem.title, ERRORS[problem.code as ErrorCode].title, what);
            assert.ok(typeof problem.detail === 'string' && problem.detail.length > 0, what);
            // Every 400 but a body that is not JSON at all is about fields, and names them.
            if (res.statusCode === 400 && problem.code !== 'malformed_json') {
              assert.ok(Array.isArray(problem.errors) && problem.errors.length > 0, `a validation error names its fields: ${what}`);
              for (const e of problem.errors) assert.ok(typeof e.field === 'string' && e.field.length > 0 && typeof e.message === 'string', what);
            }
          }
          openApi.check(r.method, r.path, { status: res.statusCode, contentType: res.headers['content-type'] as string | undefined, body: res.body });
        }),
        { seed: SEED, numRuns: RUNS, endOnFailure: true, includeErrorInReport: true },
      );
    });

    test('Herald still answers afterwards', async () => {
      assert.equal((await h.app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
    });
  });
}
