import assert from 'node:assert/strict';
import { ERRORS, type ErrorCode } from '../../src/errors.ts';

/**
 * Asserts an RFC 9457 problem answer with Herald's stable code, and, when
 * `field` is given, that the errors list names exactly that field.
 */
export function assertProblem(
  res: { status: number; json: any; headers: Record<string, unknown> },
  code: ErrorCode,
  field?: string,
): void {
  const context = JSON.stringify(res.json);
  assert.equal(res.status, ERRORS[code].status, context);
  assert.match(String(res.headers['content-type']), /^application\/problem\+json; charset=utf-8$/);
  assert.equal(res.json.code, code, context);
  assert.equal(res.json.status, res.status);
  assert.equal(res.json.title, ERRORS[code].title);
  assert.equal(res.json.type, `https://herald.dev/problems/${code}`);
  assert.equal(typeof res.json.detail, 'string');
  assert.ok(res.json.detail.length > 0);
  if (field !== undefined) {
    assert.ok(Array.isArray(res.json.errors), `errors listed: ${context}`);
    assert.deepEqual(
      res.json.errors.map((e: { field: string }) => e.field),
      [field],
      context,
    );
    assert.ok(res.json.detail.includes(field), `detail names ${field}: ${res.json.detail}`);
  }
}
