import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ApiClient } from './api-client.ts';
import type { Endpoint } from './api-output.ts';

/**
 * `herald listen`'s endpoint: one per local address, registered on the first
 * run and reused after, so a fixed `--port` keeps its endpoint id, its
 * attempt log and its signing secret across runs.
 *
 * The API shows a secret only when it makes one, so `herald listen` keeps
 * the secret it was given in `<dataDir>/listen/<endpoint id>.secret`
 * (directory 0700, file 0600), beside the database and its key, which are
 * as private. A stable secret is what lets the developer's app, behind
 * --forward-to, verify with a secret set once. The secret is rotated only
 * when none is stored for the endpoint or the stored one no longer matches
 * the endpoint's hint (it was rotated elsewhere).
 */
export interface ListenEndpoint {
  endpoint: Endpoint;
  secret: string;
  /** `created`: new; `reused`: as it was; `rotated`: reused with a new secret. */
  how: 'created' | 'reused' | 'rotated';
}

function secretPath(dataDir: string, endpointId: string): string {
  return join(dataDir, 'listen', `${endpointId}.secret`);
}

function storedSecret(dataDir: string, endpointId: string): string | undefined {
  const path = secretPath(dataDir, endpointId);
  return existsSync(path) ? readFileSync(path, 'utf8').trim() : undefined;
}

function storeSecret(dataDir: string, endpointId: string, secret: string): void {
  mkdirSync(join(dataDir, 'listen'), { recursive: true, mode: 0o700 });
  writeFileSync(secretPath(dataDir, endpointId), `${secret}\n`, { mode: 0o600 });
}

/** The hint is the secret's first characters and an ellipsis (whsec_abcd…). */
function matchesHint(secret: string, hint: string): boolean {
  const prefix = hint.replace(/…$/, '');
  return prefix.length > 0 && secret.startsWith(prefix);
}

async function findByUrl(api: ApiClient, url: string): Promise<Endpoint | undefined> {
  const { data } = await api.list<Endpoint>('/v1/endpoints');
  return data.find((e) => e.url === url);
}

/**
 * Registers the endpoint at `url` for `eventTypes`, or brings the existing one up to date.
 *
 * @example
 *   const { endpoint, secret } = await registerListenEndpoint(api, { url: 'https://localhost:8443/', eventTypes: ['alarm.created'], dataDir });
 */
export async function registerListenEndpoint(api: ApiClient, options: { url: string; eventTypes: string[]; dataDir: string }): Promise<ListenEndpoint> {
  const { url, eventTypes, dataDir } = options;
  const existing = await findByUrl(api, url);
  if (!existing) {
    const { body } = await api.call<Endpoint & { secret: string }>('POST', '/v1/endpoints', {
      body: { url, event_types: eventTypes, description: 'herald listen on this machine' },
      idempotencyKey: randomUUID(),
    });
    storeSecret(dataDir, body.id, body.secret);
    return { endpoint: body, secret: body.secret, how: 'created' };
  }
  const id = encodeURIComponent(existing.id);
  let { body: endpoint } = await api.call<Endpoint>('PATCH', `/v1/endpoints/${id}`, { body: { event_types: eventTypes }, idempotencyKey: randomUUID() });
  // Disabled after failures while nothing listened: listening again is the fix.
  if (endpoint.state === 'disabled') endpoint = (await api.call<Endpoint>('POST', `/v1/endpoints/${id}/enable`, { idempotencyKey: randomUUID() })).body;
  const stored = storedSecret(dataDir, existing.id);
  if (stored !== undefined && matchesHint(stored, endpoint.secret_hint)) return { endpoint, secret: stored, how: 'reused' };
  const { body } = await api.call<Endpoint & { secret: string }>('POST', `/v1/endpoints/${id}/rotate-secret`, { idempotencyKey: randomUUID() });
  storeSecret(dataDir, existing.id, body.secret);
  return { endpoint: { ...endpoint, secret_hint: body.secret_hint }, secret: body.secret, how: 'rotated' };
}
