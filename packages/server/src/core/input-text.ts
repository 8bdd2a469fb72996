/**
 * What Herald accepts as text and JSON from outside. PostgreSQL's `text` (and
 * `jsonb`) cannot hold U+0000, and a lone UTF-16 surrogate is not Unicode at
 * all (many receivers' JSON parsers refuse it): both are refused at the door,
 * in every field, with its name, rather than failing deep inside.
 */

/** How deeply a JSON body may nest objects and arrays: far past any real record, far short of a stack overflow. */
export const MAX_JSON_DEPTH = 64;

const NOT_TEXT = /[\0\p{Cs}]/u;

/** What is wrong with a string as text Herald can store and send on, or undefined when nothing is. */
export function textFault(value: string): string | undefined {
  const found = NOT_TEXT.exec(value);
  if (!found) return undefined;
  if (found[0] === '\0') return 'must not contain the NUL character (U+0000)';
  return 'must be valid Unicode text: it contains a lone surrogate (half of a UTF-16 pair, such as \\ud800)';
}

/**
 * Whether JSON text nests objects and arrays deeper than `max`, found by
 * counting brackets outside strings, before anything recursive (a parser, a
 * validator) walks it. Malformed text is left for the parser to refuse.
 */
export function nestsDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // a backslash: the next character is escaped
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}

/**
 * JSON text decoded from valid UTF-8 can hold a NUL or a lone surrogate only
 * as an escape (`\u0000`, `\ud800`): without one, no string needs a look.
 */
const MAY_HOLD_FAULT = /\\u(?:0000|[dD][89a-fA-F])/;

/**
 * The first string of a parsed JSON value (values and field names) that
 * `textFault` refuses: its path as segments and what is wrong. `text` is the
 * JSON it was parsed from; without a suspicious escape in it, nothing is walked.
 * The value's depth must already be bounded (see `nestsDeeperThan`).
 */
export function findTextFault(value: unknown, text: string): { path: string[]; message: string } | undefined {
  if (!MAY_HOLD_FAULT.test(text)) return undefined;
  const path: string[] = [];
  const walk = (v: unknown): string | undefined => {
    if (typeof v === 'string') return textFault(v);
    if (typeof v !== 'object' || v === null) return undefined;
    const entries: Array<[string, unknown]> = Array.isArray(v) ? v.map((item, i) => [String(i), item]) : Object.entries(v);
    for (const [key, item] of entries) {
      const keyFault = textFault(key);
      if (keyFault) return `has a field name that ${keyFault}`;
      path.push(key);
      const fault = walk(item);
      if (fault) return fault;
      path.pop();
    }
    return undefined;
  };
  const message = walk(value);
  return message ? { path, message } : undefined;
}
