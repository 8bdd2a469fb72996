import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { HeraldError, type FieldError } from '../errors.ts';
import type { Queryable } from '../storage/db.ts';
import * as q from '../storage/queries/portal-sessions.ts';
import { requireAccount } from './accounts.ts';

/**
 * Portal sessions: the control panel embedded in another site's page (the
 * platform's own settings page), for one account, without a second sign-in.
 * The platform's backend asks for a link with its API key; the link opens
 * once, in an iframe on one of the origins it names, and becomes a session
 * whose token the panel keeps in memory (docs/decisions/0018).
 */

export const LINK_MINUTES = { default: 5, max: 60 } as const;
export const SESSION_MINUTES = { default: 60, max: 720 } as const;
export const MAX_ALLOWED_ORIGINS = 10;

/** Kept this long after they end, so that a used link opened again still says it was used. */
const KEEP_ENDED_MS = 24 * 60 * 60 * 1000;

const LINK_PREFIX = 'hpl_';
const SESSION_PREFIX = 'hps_';
const TOKEN = /^[A-Za-z0-9_-]{43}$/;

export interface PortalSessionInput {
  read_only?: unknown;
  allowed_origins?: unknown;
  expires_in_minutes?: unknown;
  session_minutes?: unknown;
  accent_color?: unknown;
  logo_url?: unknown;
  hide_sign_out?: unknown;
}

const hash = (token: string) => createHash('sha256').update(token).digest();
const newToken = (prefix: string) => prefix + randomBytes(32).toString('base64url');

/** A session token's shape (`hps_` and 43 base64url characters); anything else is never looked up. */
export function isPortalSessionToken(token: string): boolean {
  return token.startsWith(SESSION_PREFIX) && TOKEN.test(token.slice(SESSION_PREFIX.length));
}

function isLinkToken(token: string): boolean {
  return token.startsWith(LINK_PREFIX) && TOKEN.test(token.slice(LINK_PREFIX.length));
}

/** Hosts a browser treats as its own machine: the only ones allowed over plain http (development). */
const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * One origin allowed to frame the panel, exactly as the browser names the
 * framing page's origin and as CSP `frame-ancestors` takes it:
 * `https://host[:port]`, nothing before or after, no wildcard. Written as
 * the URL standard serialises it (lower case, no default port, no trailing
 * slash), so what is stored is what the header says.
 */
export function originError(value: unknown): string | undefined {
  const example = 'e.g. https://app.example.com or https://app.example.com:8443';
  if (typeof value !== 'string' || value === '' || value.length > 300) return `must be an origin, ${example}`;
  if (value.includes('*')) return `must name one origin: wildcards are not accepted (list each origin, up to ${MAX_ALLOWED_ORIGINS}), ${example}`;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return `must be an origin: scheme, host and optional port, ${example}`;
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && LOOPBACK.has(url.hostname))) {
    return `must be https (plain http only for localhost, 127.0.0.1 and [::1] while developing), ${example}`;
  }
  if (url.origin !== value) {
    return `must be only scheme://host[:port], written ${url.origin === 'null' ? 'as an origin' : `"${url.origin}"`}: no path, query, credentials, trailing slash or default port`;
  }
  return undefined;
}

const HEX_COLOUR = /^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/;

function logoUrlError(value: string): string | undefined {
  if (value.length > 2000) return 'must be at most 2000 characters';
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be an absolute https URL of an image, e.g. https://cdn.example.com/logo.svg';
  }
  if (url.protocol !== 'https:') return 'must be an https URL (the panel is a secure page; it loads images over https only)';
  if (url.username || url.password) return 'must not carry a user name or password';
  return undefined;
}

function minutes(field: string, value: unknown, bounds: { default: number; max: number }, errors: FieldError[]): number {
  if (value === undefined) return bounds.default;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > bounds.max) {
    errors.push({ field, message: `must be a whole number of minutes from 1 to ${bounds.max} (default ${bounds.default})` });
    return bounds.default;
  }
  return value;
}

function optionalBoolean(field: string, value: unknown, errors: FieldError[]): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') errors.push({ field, message: 'must be true or false' });
  return value === true;
}

export interface ValidPortalSession {
  readOnly: boolean;
  allowedOrigins: string[];
  linkMinutes: number;
  sessionMinutes: number;
  accentColor: string | null;
  logoUrl: string | null;
  hideSignOut: boolean;
}

export function validatePortalSession(input: PortalSessionInput): ValidPortalSession {
  const errors: FieldError[] = [];
  const origins: string[] = [];
  if (!Array.isArray(input.allowed_origins) || input.allowed_origins.length === 0 || input.allowed_origins.length > MAX_ALLOWED_ORIGINS) {
    errors.push({
      field: 'allowed_origins',
      message: `is required: the origins (1 to ${MAX_ALLOWED_ORIGINS}) of the pages that will frame the panel, e.g. ["https://app.example.com"]`,
    });
  } else {
    input.allowed_origins.forEach((origin, i) => {
      const error = originError(origin);
      if (error) errors.push({ field: `allowed_origins[${i}]`, message: error });
      else if (!origins.includes(origin as string)) origins.push(origin as string);
    });
  }
  const linkMinutes = minutes('expires_in_minutes', input.expires_in_minutes, LINK_MINUTES, errors);
  const sessionMinutes = minutes('session_minutes', input.session_minutes, SESSION_MINUTES, errors);
  let accentColor: string | null = null;
  if (input.accent_color !== undefined && input.accent_color !== null) {
    if (typeof input.accent_color !== 'string' || !HEX_COLOUR.test(input.accent_color)) {
      errors.push({ field: 'accent_color', message: 'must be a hex colour, #rgb or #rrggbb, e.g. #0a7d55' });
    } else {
      const hex = input.accent_color.toLowerCase();
      accentColor = hex.length === 4 ? `#${[...hex.slice(1)].map((c) => c + c).join('')}` : hex;
    }
  }
  let logoUrl: string | null = null;
  if (input.logo_url !== undefined && input.logo_url !== null) {
    const error = typeof input.logo_url === 'string' ? logoUrlError(input.logo_url) : 'must be an https URL';
    if (error) errors.push({ field: 'logo_url', message: error });
    else logoUrl = new URL(input.logo_url as string).href;
  }
  const readOnly = optionalBoolean('read_only', input.read_only, errors);
  const hideSignOut = optionalBoolean('hide_sign_out', input.hide_sign_out, errors);
  if (errors.length) throw new HeraldError('validation_failed', errors.map((e) => `${e.field}: ${e.message}`).join('; '), { errors });
  return { readOnly, allowedOrigins: origins, linkMinutes, sessionMinutes, accentColor, logoUrl, hideSignOut };
}

/** Creates a link for the account; the returned `token` is the only time it exists in clear. */
export async function createPortalSession(
  db: Queryable,
  accountId: string,
  input: PortalSessionInput,
  now: Date,
): Promise<{ token: string; row: q.PortalSessionRow }> {
  const valid = validatePortalSession(input);
  await requireAccount(db, accountId);
  await q.deleteEndedPortalSessions(db, new Date(now.getTime() - KEEP_ENDED_MS), 100);
  const token = newToken(LINK_PREFIX);
  const row = await q.insertPortalSession(db, {
    id: randomUUID(),
    accountId,
    linkHash: hash(token),
    readOnly: valid.readOnly,
    allowedOrigins: valid.allowedOrigins,
    accentColor: valid.accentColor,
    logoUrl: valid.logoUrl,
    hideSignOut: valid.hideSignOut,
    sessionSeconds: valid.sessionMinutes * 60,
    now,
    linkExpiresAt: new Date(now.getTime() + valid.linkMinutes * 60_000),
  });
  return { token, row };
}

export type OpenedLink =
  | { opened: true; token: string; session: q.PortalSessionRow }
  | { opened: false; reason: 'used' | 'expired'; link: q.PortalSessionRow }
  | { opened: false; reason: 'unknown' };

/** Opens a link once: the session and its token, or why not. */
export async function openPortalLink(db: Queryable, linkToken: string, now: Date): Promise<OpenedLink> {
  if (!isLinkToken(linkToken)) return { opened: false, reason: 'unknown' };
  const token = newToken(SESSION_PREFIX);
  const session = await q.openPortalLink(db, hash(linkToken), hash(token), now);
  if (session) return { opened: true, token, session };
  const link = await q.findPortalLink(db, hash(linkToken));
  if (!link) return { opened: false, reason: 'unknown' };
  return { opened: false, reason: link.opened_at ? 'used' : 'expired', link };
}

export async function findPortalSession(db: Queryable, token: string, now: Date): Promise<q.PortalSessionRow | undefined> {
  if (!isPortalSessionToken(token)) return undefined;
  return q.findLivePortalSession(db, hash(token), now);
}

export async function endPortalSession(db: Queryable, id: string, now: Date): Promise<void> {
  await q.endPortalSession(db, id, now);
}

const theme = (row: q.PortalSessionRow) => ({ accent_color: row.accent_color, logo_url: row.logo_url, hide_sign_out: row.hide_sign_out });

/** The answer to the platform that asked for a link. */
export const portalLinkJson = (row: q.PortalSessionRow, url: string) => ({
  id: row.id,
  account_id: row.account_id,
  url,
  expires_at: row.link_expires_at.toISOString(),
  session_minutes: row.session_seconds / 60,
  read_only: row.read_only,
  allowed_origins: row.allowed_origins,
  theme: theme(row),
});

/** What the embedded panel learns about its own session. */
export const portalSessionJson = (row: q.PortalSessionRow) => ({
  id: row.id,
  account: { id: row.account_id, name: row.account_name },
  read_only: row.read_only,
  theme: theme(row),
  expires_at: row.expires_at.toISOString(),
});
