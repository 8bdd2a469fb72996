import type { ApiProblem } from './api-client.ts';

/**
 * How the API commands show the API's answers to people. Scripts use
 * `--json`, which prints the API's JSON as it came; these renderings may change.
 * The fields read here are the ones documented in the OpenAPI document.
 */

export interface Attempt {
  id: string;
  event_id: string;
  event_type: string;
  attempt_number: number;
  is_test: boolean;
  started_at: string;
  duration_ms: number;
  status_code: number | null;
  outcome: 'succeeded' | 'retrying' | 'failed';
  error: string | null;
}

export interface Endpoint {
  id: string;
  url: string;
  description: string;
  event_types: string[];
  state: 'enabled' | 'disabled';
  disabled_reason: string | null;
  disabled_at: string | null;
  /** Absent from a Herald older than this command. */
  disabled_by?: { type: 'automatic' | 'user' | 'api_key' | 'portal' | 'manual'; id: string | null; name: string | null } | null;
  failure_streak: number;
  failure_threshold: number;
  rate_limit: number | null;
  throttle: { until: string | null; max_in_flight: number | null } | null;
  retention: { succeeded_days: number; undelivered_days: number };
  secret_hint: string;
  headers: Array<{ name: string; secret: boolean; value: string | null; value_hint: string | null }>;
  metadata: Record<string, string>;
  signature_scheme: 'herald' | 'standard-webhooks';
  previous_secret_expires_at: string | null;
  created_at: string;
  updated_at: string;
  last_attempt: Attempt | null;
  /** Only in the answer to create, rotate-secret and an update that changed the signature scheme. */
  secret?: string;
}

export interface Delivery {
  id: string;
  event_id: string;
  endpoint_id: string;
  state: 'pending' | 'succeeded' | 'failed' | 'skipped';
  attempts: number;
  next_attempt_at: string | null;
  last_status: number | null;
  last_error: string | null;
}

export interface HeraldEvent {
  id: string;
  type: string;
  created_at: string;
  payload: unknown;
}

export interface EventDetail extends HeraldEvent {
  deliveries: Array<Delivery & { attempt_log: Attempt[] }>;
}

export interface RecoverResult {
  since: string;
  dry_run: boolean;
  count: number;
}

export interface EventCount {
  count: number;
  capped: boolean;
}

export interface Replay {
  id: string;
  state: 'running' | 'completed' | 'canceled';
  filter: Record<string, unknown>;
  endpoint_id: string | null;
  total: number;
  done: number;
  deliveries: number;
  skipped: { disabled: number; unsubscribed: number };
  created_by: { type: 'api_key' | 'user'; id: string | null; name: string | null };
  created_at: string;
  updated_at: string;
  finished_at: string | null;
}

export interface ReplayPreview {
  dry_run: true;
  count: number;
  endpoint_id: string | null;
  endpoints: number;
}

/** Columns padded to their widest cell, two spaces apart; the last column is not padded. */
export interface PortalLink {
  id: string;
  account_id: string;
  url: string;
  expires_at: string;
  session_minutes: number;
  read_only: boolean;
  allowed_origins: string[];
}

export function table(header: string[], rows: string[][]): string {
  if (rows.length === 0) return '(none)';
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  return [header, ...rows].map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ').trimEnd()).join('\n');
}

/** `label  value` lines, labels aligned. */
function fields(pairs: Array<[string, string]>): string {
  const width = Math.max(...pairs.map(([label]) => label.length));
  return pairs.map(([label, value]) => `${label.padEnd(width)}  ${value}`).join('\n');
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** "retrying, HTTP 429, 35 ms, HTTP 429 (too many requests)": the error only when it adds to the status. */
function attemptSummary(a: Attempt): string {
  const status = a.status_code === null ? 'no answer' : `HTTP ${a.status_code}`;
  return [a.outcome, status, `${a.duration_ms} ms`, a.error !== null && a.error !== status ? a.error : null].filter(Boolean).join(', ');
}

export function endpointState(e: Endpoint): string {
  if (e.state === 'enabled') return 'enabled';
  const by = e.disabled_by;
  const who =
    by?.type === 'automatic' ? ' by Herald' : by?.type === 'user' ? ` by ${by.name} (panel)` : by?.type === 'api_key' ? ` by API key ${by.name}` : by?.type === 'portal' ? ' in the embedded panel' : by ? ' by hand' : '';
  return `disabled${who} since ${e.disabled_at}: ${e.disabled_reason}`;
}

export function rateLimitText(e: Endpoint): string {
  return e.rate_limit === null ? 'none' : `${plural(e.rate_limit, 'request')} per second at most`;
}

/** The automatic slow-down after a 429 or 503, or "no" when there is none. */
export function throttleText(e: Endpoint): string {
  const t = e.throttle;
  if (t === null) return 'no';
  const parts = [
    t.until !== null ? `no new request before ${t.until}` : null,
    t.max_in_flight !== null ? `at most ${t.max_in_flight} at a time until it answers 2xx again` : null,
  ].filter(Boolean);
  return `yes, the receiver answered 429 or 503: ${parts.join('; ')}`;
}

export function retentionText(e: Endpoint): string {
  const r = e.retention;
  return `succeeded deliveries kept ${plural(r.succeeded_days, 'day')}; failed and skipped ${plural(r.undelivered_days, 'day')} (recover reaches that far back)`;
}

export function endpointRows(endpoints: Endpoint[]): string {
  return table(
    ['ID', 'STATE', 'FAILURES', 'URL', 'EVENT TYPES'],
    endpoints.map((e) => [e.id, e.state, `${e.failure_streak}/${e.failure_threshold}`, e.url, e.event_types.join(',')]),
  );
}

export function endpointDetail(e: Endpoint): string {
  return fields([
    ['id', e.id],
    ['url', e.url],
    ['description', e.description || '(none)'],
    ['event types', e.event_types.join(', ')],
    ['state', endpointState(e)],
    ['failures', `${e.failure_streak} of ${e.failure_threshold} failed deliveries in a row before it is disabled`],
    ['rate limit', rateLimitText(e)],
    ['slowed down', throttleText(e)],
    ['history', retentionText(e)],
    ['secret', `${e.secret_hint} (masked)`],
    ['headers', e.headers.length === 0 ? '(none)' : e.headers.map((h) => `${h.name}: ${h.secret ? `${h.value_hint} (secret)` : h.value}`).join('; ')],
    ['metadata', Object.keys(e.metadata).length === 0 ? '(none)' : Object.entries(e.metadata).map(([k, v]) => `${k}=${v}`).join('; ')],
    ['signature scheme', e.signature_scheme === 'standard-webhooks' ? 'standard-webhooks (webhook-id, webhook-timestamp, webhook-signature)' : 'herald (X-Service-Signature)'],
    ['old secret', overlapText(e)],
    ['created', e.created_at],
    ['updated', e.updated_at],
    ['last attempt', e.last_attempt ? `${e.last_attempt.started_at}  ${attemptSummary(e.last_attempt)}` : '(none)'],
  ]);
}

/** A rotation's overlap as it stands. */
export function overlapText(e: Endpoint): string {
  return e.previous_secret_expires_at === null
    ? '(none: only the current secret signs)'
    : `still signs next to the new one until ${e.previous_secret_expires_at} (end it now: herald endpoints end-overlap ${e.id})`;
}

/** The one time a signing secret is shown, worded as `herald keys create` words an API key. */
export function secretShownOnce(e: Endpoint & { secret: string }): string {
  return `Signing secret of endpoint ${e.id} (shown once; store it now in your receiver's secret store):\n\n  ${e.secret}\n`;
}

export function attemptRows(attempts: Attempt[]): string {
  return table(
    ['STARTED', 'OUTCOME', 'STATUS', 'DURATION', 'TRY', 'EVENT TYPE', 'EVENT', 'ERROR'],
    attempts.map((a) => [
      a.started_at,
      a.outcome,
      a.status_code === null ? '-' : String(a.status_code),
      `${a.duration_ms} ms`,
      a.is_test ? 'test' : `#${a.attempt_number}`,
      a.event_type,
      a.event_id,
      a.error ?? '',
    ]),
  );
}

export function testResult(endpoint: { id: string }, a: Attempt & { request: { url: string } }): string {
  return [
    `Test event ${a.event_type} to ${a.request.url}: ${a.outcome === 'succeeded' ? 'succeeded' : 'FAILED'}`,
    fields([
      ['status', a.status_code === null ? 'no answer' : String(a.status_code)],
      ['error', a.error ?? '(none)'],
      ['duration', `${a.duration_ms} ms`],
      ['attempt', `${a.id} (in the attempt log of endpoint ${endpoint.id})`],
    ])
      .split('\n')
      .map((line) => `  ${line}`)
      .join('\n'),
  ].join('\n');
}

export function recoverResult(endpointId: string, r: RecoverResult): string {
  const what = `${plural(r.count, 'failed or skipped delivery', 'failed or skipped deliveries')} of endpoint ${endpointId} created since ${r.since}`;
  return r.dry_run ? `would send again ${what} (dry run: nothing was sent)` : `sending again ${what}`;
}

export function eventRows(events: HeraldEvent[]): string {
  return table(['ID', 'CREATED', 'TYPE'], events.map((e) => [e.id, e.created_at, e.type]));
}

export function deliveryLine(d: Delivery): string {
  const next = d.state === 'pending' && d.next_attempt_at ? `, next attempt at ${d.next_attempt_at}` : '';
  const last = d.last_status !== null ? `, last HTTP ${d.last_status}` : d.last_error ? `, last error: ${d.last_error}` : '';
  return `endpoint ${d.endpoint_id}  ${d.state}  (${plural(d.attempts, 'attempt')}${next}${last})`;
}

export function eventDetail(e: EventDetail): string {
  const lines = [fields([['id', e.id], ['type', e.type], ['created', e.created_at], ['payload', JSON.stringify(e.payload)]])];
  lines.push('', e.deliveries.length === 0 ? 'deliveries: (none: no endpoint subscribed to this type when it was published)' : `deliveries (${e.deliveries.length}):`);
  for (const d of e.deliveries) {
    lines.push(`  ${deliveryLine(d)}`);
    for (const a of d.attempt_log) lines.push(`    #${a.attempt_number}  ${a.started_at}  ${attemptSummary(a)}`);
  }
  return lines.join('\n');
}

/** `<detail> (<status> <code>)` and each invalid field the detail does not already spell out; the CLI puts its prefix before the first line. */
export function problemLines(p: ApiProblem): string[] {
  const lines = [`${p.detail} (${p.status} ${p.code})`];
  const errors = p.errors ?? [];
  const spelledOut = errors.length === 1 && p.detail === `${errors[0]!.field}: ${errors[0]!.message}`;
  if (!spelledOut) for (const e of errors) lines.push(`  ${e.field}: ${e.message}`);
  if (p.status === 401) lines.push('The API key in --api-key / HERALD_API_KEY was refused: it is unknown, mistyped or revoked.');
  return lines;
}

export function eventCount(c: EventCount): string {
  return c.capped ? `more than ${c.count.toLocaleString('en')} events match` : `${plural(c.count, 'event')} match`;
}

const replayTarget = (endpointId: string | null) => (endpointId ? `endpoint ${endpointId}` : 'every endpoint subscribed to each event\u2019s type');

export function replayPreview(p: ReplayPreview): string {
  return `would send ${plural(p.count, 'event')} again to ${replayTarget(p.endpoint_id)} (${plural(p.endpoints, 'enabled endpoint')} now; dry run: nothing was sent)`;
}

const creator = (r: Replay) => `${r.created_by.type === 'api_key' ? 'API key' : 'user'} ${r.created_by.name ?? r.created_by.id ?? '(deleted)'}`;

export function replayDetail(r: Replay): string {
  return fields([
    ['id', r.id],
    ['state', r.state],
    ['progress', `${r.done} of ${r.total} events`],
    ['deliveries', `${r.deliveries} created`],
    ['skipped', `${r.skipped.disabled} to disabled endpoints, ${r.skipped.unsubscribed} of types the endpoint does not subscribe to`],
    ['to', replayTarget(r.endpoint_id)],
    ['selection', JSON.stringify(r.filter)],
    ['created', `${r.created_at} by ${creator(r)}`],
    ...(r.finished_at ? ([['finished', r.finished_at]] as Array<[string, string]>) : []),
  ]);
}

export function replayRows(replays: Replay[]): string {
  return table(
    ['ID', 'CREATED', 'STATE', 'DONE', 'BY'],
    replays.map((r) => [r.id, r.created_at, r.state, `${r.done}/${r.total}`, creator(r)]),
  );
}

export function portalLink(p: PortalLink): string {
  return [
    `Portal link for account ${p.account_id} (opens once, until ${p.expires_at}; ${p.read_only ? 'read-only, ' : ''}the session lasts ${p.session_minutes} min):`,
    '',
    `  ${p.url}`,
    '',
    `Frame it from: ${p.allowed_origins.join(', ')}`,
  ].join('\n');
}
