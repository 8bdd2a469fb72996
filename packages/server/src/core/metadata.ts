import { invalidField } from '../errors.ts';

/**
 * An endpoint's metadata: the owner's own labels, a flat object of string
 * keys to string values (a team, a tenant id), returned as given and
 * filterable in the endpoint list. Bounded as Stripe bounds its own.
 */

/** The most keys one endpoint's metadata may have. */
export const MAX_METADATA_KEYS = 50;
/** The longest key, in characters. */
export const MAX_METADATA_KEY_LENGTH = 40;
/** The longest value, in characters. */
export const MAX_METADATA_VALUE_LENGTH = 500;

/**
 * Checks metadata as given to the API: the whole object is replaced, `{}`
 * removes it all. Undefined stays undefined (left as it is). Keys may not
 * hold square brackets, which the list's `metadata[key]=value` filter uses.
 */
export function checkMetadata(value: unknown): Record<string, string> | undefined {
  if (value === undefined) return undefined;
  if (!value || typeof value !== 'object' || Array.isArray(value)) {
    throw invalidField('metadata', 'must be an object of string keys to string values, e.g. {"team": "billing"}; {} removes it all');
  }
  const entries = Object.entries(value);
  if (entries.length > MAX_METADATA_KEYS) throw invalidField('metadata', `has ${entries.length} keys; an endpoint may have at most ${MAX_METADATA_KEYS}`);
  for (const [k, v] of entries) {
    if (k.length === 0 || k.length > MAX_METADATA_KEY_LENGTH || /[[\]]/.test(k)) {
      throw invalidField('metadata', `key "${k.slice(0, MAX_METADATA_KEY_LENGTH)}" must be 1 to ${MAX_METADATA_KEY_LENGTH} characters without square brackets`);
    }
    if (typeof v !== 'string' || v.length > MAX_METADATA_VALUE_LENGTH) {
      throw invalidField(`metadata.${k}`, `must be a string of at most ${MAX_METADATA_VALUE_LENGTH} characters`);
    }
  }
  return Object.fromEntries(entries) as Record<string, string>;
}
