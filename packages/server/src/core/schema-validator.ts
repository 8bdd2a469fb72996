import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { fieldPath, type FieldError } from '../errors.ts';

// ajv-formats is CommonJS with a default export.
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

/**
 * Validates event data against the JSON Schema of its type. Compiled
 * validators are cached by schema text, so a type changed by an operator gets
 * a new validator and the hot path never recompiles.
 */
export class SchemaValidator {
  readonly #ajv: Ajv2020;
  readonly #byText = new Map<string, ValidateFunction>();
  readonly #byObject = new WeakMap<object, ValidateFunction>();

  constructor() {
    this.#ajv = new Ajv2020({ allErrors: true, strict: false });
    addFormats(this.#ajv);
  }

  /** Throws when `schema` is not a usable JSON Schema. */
  compile(schema: unknown): ValidateFunction {
    // The catalog hands out the same schema object every time: found without serialising it.
    const object = schema !== null && typeof schema === 'object' ? schema : undefined;
    let validate = object && this.#byObject.get(object);
    if (validate) return validate;
    const key = JSON.stringify(schema);
    validate = this.#byText.get(key);
    if (!validate) {
      validate = this.#ajv.compile(schema as object);
      this.#byText.set(key, validate);
    }
    if (object) this.#byObject.set(object, validate);
    return validate;
  }

  /** Field errors under `prefix` (e.g. `data`), or an empty list. */
  check(schema: unknown, value: unknown, prefix: string): FieldError[] {
    const validate = this.compile(schema);
    if (validate(value)) return [];
    return (validate.errors ?? []).map((e) => {
      const missing = e.keyword === 'required' ? `/${(e.params as { missingProperty: string }).missingProperty}` : '';
      const field = fieldPath([prefix, ...`${e.instancePath}${missing}`.split('/').filter(Boolean)]);
      const message =
        e.keyword === 'required' ? 'is required' : e.keyword === 'const' ? `must be ${JSON.stringify((e.params as { allowedValue: unknown }).allowedValue)}` : (e.message ?? 'is invalid');
      return { field, message };
    });
  }
}
