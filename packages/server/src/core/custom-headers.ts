import { HEADER, STANDARD_HEADER } from '@herald/verify';
import { invalidField } from '../errors.ts';
import { decryptSecret, encryptSecret } from './secrets.ts';

/**
 * An endpoint's custom headers: static headers the owner adds to every
 * request Herald sends it (an API gateway's key, a routing tag). They never
 * replace Herald's own headers: names Herald sets, names HTTP gives a meaning
 * to on the connection itself, and the X-Service- family are refused.
 *
 * Stored as a JSON array on the endpoint's row, in the order given. A secret
 * value is stored sealed (AES-256-GCM under the operator key, as the signing
 * secret is, bound to the endpoint and the header's name) with a short hint;
 * the API shows only the hint.
 */

/** The most custom headers one endpoint may have. */
export const MAX_HEADERS = 20;
/** The longest header name, in characters. */
export const MAX_NAME_LENGTH = 100;
/** The longest header value, in characters: room for a long bearer token. */
export const MAX_VALUE_LENGTH = 4_096;
/** The most characters all of an endpoint's custom header names and values may add up to. */
export const MAX_TOTAL_LENGTH = 8_192;

/**
 * Names refused whatever their case: Herald's own headers, in either
 * signature scheme (an endpoint can change scheme), those the HTTP
 * client computes (Host, Content-Length), and those about the connection or
 * the message's framing, which a static value would break or smuggle past.
 */
export const RESERVED_NAMES: ReadonlySet<string> = new Set(
  [
    ...Object.values(HEADER),
    ...Object.values(STANDARD_HEADER),
    'Host',
    'Content-Length',
    'Content-Encoding',
    'Transfer-Encoding',
    'Connection',
    'Keep-Alive',
    'Upgrade',
    'TE',
    'Trailer',
    'Expect',
    'Proxy-Connection',
    'Proxy-Authorization',
    'Proxy-Authenticate',
    'HTTP2-Settings',
  ].map((n) => n.toLowerCase()),
);

/** Prefixes refused: Herald's own header family, now and to come. */
export const RESERVED_PREFIXES: readonly string[] = ['x-service-'];

/** RFC 9110 token: the characters a field name may have. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** A field value Herald sends: visible ASCII, spaces and tabs, nothing at either end. */
const VALUE = /^[\x21-\x7e](?:[\t\x20-\x7e]*[\x21-\x7e])?$/;

/** One custom header as stored: a plain value, or a sealed one with its hint. */
export type StoredHeader = { name: string; value: string } | { name: string; sealed: string; hint: string };

/** One custom header as the API shows it: a secret value never, only its hint. */
export type HeaderView = { name: string; secret: boolean; value: string | null; value_hint: string | null };

export function headerView(h: StoredHeader): HeaderView {
  return 'sealed' in h ? { name: h.name, secret: true, value: null, value_hint: h.hint } : { name: h.name, secret: false, value: h.value, value_hint: null };
}

/** What a secret value shows: its first four characters when it is long enough for that to give little away. */
export function hintOf(value: string): string {
  return value.length >= 16 ? `${value.slice(0, 4)}…` : '…';
}

function headerContext(endpointId: string, name: string): string {
  return `${endpointId}/header/${name.toLowerCase()}`;
}

/** Why `name` may not be a custom header's name, or undefined when it may. */
export function headerNameFault(name: string): string | undefined {
  if (name.length === 0 || name.length > MAX_NAME_LENGTH || !TOKEN.test(name)) {
    return `"${name.slice(0, MAX_NAME_LENGTH)}" is not a header name: use 1 to ${MAX_NAME_LENGTH} letters, digits and !#$%&'*+-.^_\`|~ (an HTTP token), e.g. X-Api-Key`;
  }
  const lower = name.toLowerCase();
  if (RESERVED_NAMES.has(lower) || RESERVED_PREFIXES.some((p) => lower.startsWith(p))) {
    return `${name} is set by Herald or by HTTP itself and cannot be replaced; pick another name (reserved: the X-Service- headers, Content-Type, Content-Length, Content-Encoding, Host, User-Agent, Connection, Transfer-Encoding and the other hop-by-hop headers; see docs/api.md)`;
  }
  return undefined;
}

/**
 * Checks custom headers as given to the API and makes what is stored: the
 * whole list is replaced. A secret header given without a value keeps the
 * value it has (`previous`, the stored list), so a client can change the
 * others without knowing it. Undefined stays undefined (left as it is).
 */
export function checkHeaders(
  value: unknown,
  p: { encryptionKey: Buffer; endpointId: string; previous: readonly StoredHeader[] },
): StoredHeader[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value)) throw invalidField('headers', 'must be a list of {"name", "value", "secret"} objects; [] removes them all');
  if (value.length > MAX_HEADERS) throw invalidField('headers', `has ${value.length} headers; an endpoint may have at most ${MAX_HEADERS}`);
  const seen = new Set<string>();
  let total = 0;
  const out: StoredHeader[] = [];
  value.forEach((h: unknown, i) => {
    const at = `headers[${i}]`;
    if (!h || typeof h !== 'object' || Array.isArray(h)) throw invalidField(at, 'must be an object with "name" and "value", and "secret": true to keep the value secret');
    const { name, value: v, secret = false } = h as { name?: unknown; value?: unknown; secret?: unknown };
    if (typeof name !== 'string') throw invalidField(`${at}.name`, 'must be a string');
    const fault = headerNameFault(name);
    if (fault) throw invalidField(`${at}.name`, fault);
    if (seen.has(name.toLowerCase())) throw invalidField(`${at}.name`, `${name} is given twice; give each header once`);
    seen.add(name.toLowerCase());
    if (typeof secret !== 'boolean') throw invalidField(`${at}.secret`, 'must be true or false');
    if (v === undefined && secret) {
      const kept = p.previous.find((o) => 'sealed' in o && o.name.toLowerCase() === name.toLowerCase());
      if (!kept) throw invalidField(`${at}.value`, `is required: ${name} has no secret value to keep`);
      out.push({ ...kept, name });
      total += name.length;
      return;
    }
    if (typeof v !== 'string' || v.length > MAX_VALUE_LENGTH || !VALUE.test(v)) {
      throw invalidField(
        `${at}.value`,
        `must be 1 to ${MAX_VALUE_LENGTH.toLocaleString('en')} characters of printable ASCII (spaces and tabs inside only; no line breaks or control characters)`,
      );
    }
    total += name.length + v.length;
    out.push(secret ? { name, sealed: encryptSecret(p.encryptionKey, v, headerContext(p.endpointId, name)).toString('base64'), hint: hintOf(v) } : { name, value: v });
  });
  if (total > MAX_TOTAL_LENGTH) {
    throw invalidField('headers', `names and values add up to ${total.toLocaleString('en')} characters; an endpoint's may add up to ${MAX_TOTAL_LENGTH.toLocaleString('en')}`);
  }
  return out;
}

/** The headers to send, secret values opened: [name, value] pairs in the order stored. */
export function openHeaders(encryptionKey: Buffer, endpointId: string, stored: readonly StoredHeader[]): Array<[string, string]> {
  return stored.map((h) => [h.name, 'sealed' in h ? decryptSecret(encryptionKey, Buffer.from(h.sealed, 'base64'), headerContext(endpointId, h.name)) : h.value]);
}
