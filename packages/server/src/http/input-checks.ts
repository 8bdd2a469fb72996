import type { FastifyInstance, FastifyRequest } from 'fastify';
import { findTextFault, MAX_JSON_DEPTH, nestsDeeperThan, textFault } from '../core/input-text.ts';
import { fieldPath, HeraldError, invalidField } from '../errors.ts';

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Bounds what a request can carry before any route sees it (core/input-text.ts):
 * - a JSON body must be UTF-8, nest at most MAX_JSON_DEPTH levels (checked
 *   before parsing, so nothing recursive meets a deeper one), and hold no NUL
 *   or lone surrogate in any string; fastify's own parser does the rest
 *   (syntax, `__proto__` keys);
 * - path parameters and query strings hold no NUL or lone surrogate either.
 * Each refusal is a 400 naming the field.
 */
export function registerInputChecks(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body: Buffer, done) => {
    let text: string;
    try {
      text = UTF8.decode(body);
    } catch {
      return done(new HeraldError('malformed_json', 'the body is not valid UTF-8; send JSON encoded as UTF-8'), undefined);
    }
    if (nestsDeeperThan(text, MAX_JSON_DEPTH)) {
      return done(invalidField('body', `nests objects and arrays more than ${MAX_JSON_DEPTH} levels deep`), undefined);
    }
    parseJson(request, text, (err, value) => {
      if (err) return done(err, undefined);
      const fault = findTextFault(value, text);
      if (fault) return done(invalidField(fieldPath(fault.path) || 'body', fault.message), undefined);
      done(null, value);
    });
  });
  app.addHook('preValidation', async (request: FastifyRequest) => {
    checkStrings(request.params, 'path');
    checkStrings(request.query, 'query');
  });
}

/**
 * Refuses the first name or value of a flat parameter object (a query's
 * values may be lists) that is not text. Fields are named as schema errors
 * name them: `query.type`, and a path parameter by its bare name (`id`).
 */
function checkStrings(values: unknown, where: 'path' | 'query'): void {
  if (typeof values !== 'object' || values === null) return;
  for (const [name, value] of Object.entries(values)) {
    const nameFault = textFault(name);
    if (nameFault) throw invalidField(where, `has a parameter name that ${nameFault}`);
    for (const item of Array.isArray(value) ? value : [value]) {
      const fault = typeof item === 'string' ? textFault(item) : undefined;
      if (fault) throw invalidField(where === 'query' ? `query.${name}` : name, fault);
    }
  }
}
