import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

interface OpenApiDoc {
  paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: unknown }> }> }>>;
}

const escape = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

/**
 * Checks real responses against the OpenAPI document the server serves: the
 * status must be documented for the operation, and the body must match the
 * schema of its content type. Paths that are not in the document (a test of
 * the 404 for unknown routes, say) are not checked.
 */
export class OpenApiChecker {
  readonly #ajv: Ajv2020;
  readonly #doc: OpenApiDoc;
  readonly #templates: Array<{ template: string; pattern: RegExp }>;
  readonly #cache = new Map<string, ValidateFunction>();

  constructor(doc: unknown) {
    this.#doc = doc as OpenApiDoc;
    this.#ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
    addFormats(this.#ajv);
    this.#ajv.addSchema(doc as object, 'openapi');
    this.#templates = Object.keys(this.#doc.paths).map((template) => ({
      template,
      pattern: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`),
    }));
  }

  /** Throws an Error naming what does not match. */
  check(method: string, url: string, res: { status: number; contentType: string | undefined; body: string }): void {
    const path = url.split('?')[0]!;
    const found = this.#templates.find((t) => t.pattern.test(path));
    if (!found) return;
    const operation = this.#doc.paths[found.template]![method.toLowerCase()];
    if (!operation) return;
    const documented = operation.responses[String(res.status)];
    if (!documented) {
      throw new Error(`${method} ${found.template} answered ${res.status}, which the OpenAPI document does not list (it lists ${Object.keys(operation.responses).join(', ')}): ${res.body.slice(0, 300)}`);
    }
    if (!documented.content) {
      if (res.body !== '') throw new Error(`${method} ${found.template} ${res.status} is documented without a body but sent one`);
      return;
    }
    const mediaType = (res.contentType ?? '').split(';')[0]!.trim();
    if (!documented.content[mediaType]) {
      throw new Error(`${method} ${found.template} ${res.status} sent ${mediaType || 'no content type'}; documented: ${Object.keys(documented.content).join(', ')}`);
    }
    const pointer = `openapi#/paths/${escape(found.template)}/${method.toLowerCase()}/responses/${res.status}/content/${escape(mediaType)}/schema`;
    let validate = this.#cache.get(pointer);
    if (!validate) {
      validate = this.#ajv.getSchema(pointer);
      if (!validate) throw new Error(`no schema at ${pointer}`);
      this.#cache.set(pointer, validate);
    }
    if (!validate(JSON.parse(res.body))) {
      throw new Error(`${method} ${url} ${res.status} does not match the OpenAPI document: ${this.#ajv.errorsText(validate.errors)}\n${res.body.slice(0, 500)}`);
    }
  }
}
