import { Command, InvalidArgumentError } from 'commander';
import { randomUUID } from 'node:crypto';
import type { ApiClient, ApiResponse } from './api-client.ts';
import * as show from './api-output.ts';
import type { Attempt, Delivery, Endpoint, EventCount, EventDetail, HeraldEvent, PortalLink, RecoverResult, Replay, ReplayPreview } from './api-output.ts';

/**
 * `herald endpoints|attempts|events|replays|portal-sessions`: a mirror of the management API for
 * operators and scripts. Each command is one or a few API calls; the rules
 * (validation, state changes, who sees what) are the server's, so a command
 * here never decides anything the API would not.
 */
export interface ApiCommandContext {
  /** The client for this invocation; throws a ConfigError naming the setting when no API key is set. */
  api(): ApiClient;
  /** `--json`: print the API's JSON as it came. */
  json(): boolean;
}

/** Attempts and events shown when `--limit` is not given (the API's own default page). */
const DEFAULT_LIMIT = 20;

const id = encodeURIComponent;

function positiveInteger(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1) throw new InvalidArgumentError('must be a whole number of at least 1.');
  return Number(value);
}

/**
 * `--rate-limit`: a whole number of requests per second, or `none` to have no
 * limit. The server checks the range. (Not null for none: commander turns a
 * null from a parser into an empty string.)
 */
function rateLimit(value: string): number | 'none' {
  if (value.trim().toLowerCase() === 'none') return 'none';
  if (!/^\d+$/.test(value.trim())) throw new InvalidArgumentError('must be a whole number of requests per second, or none.');
  return Number(value.trim());
}

/** The API's rate_limit for a `--rate-limit` given, or nothing when it was not. */
const rateLimitBody = (value: number | 'none' | undefined) => (value === undefined ? {} : { rate_limit: value === 'none' ? null : value });

/** `--scheme`: one of the two signature schemes. */
function scheme(value: string): 'herald' | 'standard-webhooks' {
  const v = value.trim().toLowerCase();
  if (v !== 'herald' && v !== 'standard-webhooks') throw new InvalidArgumentError('must be herald or standard-webhooks.');
  return v;
}

/** `--overlap`: seconds, bare or with a unit: 90, 90s, 30m, 12h, 7d. */
function overlap(value: string): number {
  const match = /^(\d+)\s*([smhd]?)$/.exec(value.trim().toLowerCase());
  if (!match) throw new InvalidArgumentError('must be a duration such as 3600, 30m, 24h or 7d (at most 7d).');
  return Number(match[1]) * { '': 1, s: 1, m: 60, h: 3600, d: 86_400 }[match[2] as '' | 's' | 'm' | 'h' | 'd'];
}

/** `alarm.created, alarm.resolved` → ['alarm.created', 'alarm.resolved']. */
function eventTypeList(value: string): string[] {
  return value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

type HeaderOption = { name: string; value?: string; secret: boolean };

/**
 * `--header 'X-Tenant: acme'` (or `--secret-header`), each one added to those
 * before it. A secret header given by name alone (`--secret-header
 * X-Api-Key`) keeps the value it has, on update. The server checks names
 * and values.
 */
const headerOption = (secret: boolean) => (raw: string, previous: HeaderOption[]) => {
  const colon = raw.indexOf(':');
  if (colon === -1 && !secret) throw new InvalidArgumentError('must be "Name: value", e.g. --header "X-Tenant: acme".');
  const header = colon === -1 ? { name: raw.trim(), secret } : { name: raw.slice(0, colon).trim(), value: raw.slice(colon + 1).trim(), secret };
  return [...previous, header];
};

/** `--metadata team=billing`, each pair added to those before it. */
function metadataOption(pair: string, previous: Record<string, string>): Record<string, string> {
  const eq = pair.indexOf('=');
  if (eq < 1) throw new InvalidArgumentError('must be key=value, e.g. --metadata team=billing.');
  return { ...previous, [pair.slice(0, eq)]: pair.slice(eq + 1) };
}

interface HeaderAndMetadataOptions {
  header: HeaderOption[];
  secretHeader: HeaderOption[];
  clearHeaders?: boolean;
  metadata: Record<string, string>;
  clearMetadata?: boolean;
}

/** The API's headers and metadata for the options given, or nothing for those not given. */
function headersAndMetadataBody(o: HeaderAndMetadataOptions): { headers?: HeaderOption[]; metadata?: Record<string, string> } {
  const headers = [...o.header, ...o.secretHeader];
  return {
    ...(headers.length > 0 || o.clearHeaders ? { headers } : {}),
    ...(Object.keys(o.metadata).length > 0 || o.clearMetadata ? { metadata: o.metadata } : {}),
  };
}

/** The header and metadata options create and update share; on update, those given replace what the endpoint has. */
function headerAndMetadataOptions(command: Command, update: boolean): Command {
  const replacing = (what: string) => (update ? ` (replace all its ${what})` : '');
  return command
    .option('--header <name: value>', `a custom header sent with every request, e.g. "X-Tenant: acme"; repeat for more${replacing('headers')}`, headerOption(false), [])
    .option(
      '--secret-header <name: value>',
      `a custom header whose value is stored encrypted and never shown again${update ? '; a name alone keeps its value' : ''}${replacing('headers')}`,
      headerOption(true),
      [],
    )
    .option('--metadata <key=value>', `a metadata pair, e.g. team=billing; repeat for more${replacing('metadata')}`, metadataOption, {});
}

/** Every mutating command sends an Idempotency-Key, so a command retried after a lost answer acts once. */
function mutating(command: Command): Command {
  return command.option('--idempotency-key <key>', 'send this Idempotency-Key (default: a fresh UUID); repeat a command with the same key to retry it safely');
}

const keyOf = (o: { idempotencyKey?: string }) => o.idempotencyKey ?? randomUUID();

export function registerApiCommands(program: Command, ctx: ApiCommandContext): void {
  /** Prints the API's JSON with --json, or the human rendering. */
  function print<T>(res: ApiResponse<T> | { body: T; replayed?: boolean }, human: (body: T) => string): void {
    if (ctx.json()) {
      if (res.body !== undefined) console.log(JSON.stringify(res.body, null, 2));
      return;
    }
    if (res.replayed) console.error('note: the server replayed its answer to an earlier request with this Idempotency-Key; nothing was done again');
    console.log(human(res.body));
  }

  // Their help lists --herald-url, --api-key and --json, which they need and which are program-wide.
  const withGlobalHelp = (command: Command) => command.configureHelp({ showGlobalOptions: true });

  const endpoints = withGlobalHelp(program.command('endpoints').description('endpoints of the account of the API key (through the API)'));

  endpoints
    .command('list')
    .description('list every endpoint, oldest first, or those matching --search and --metadata')
    .option('--search <text>', 'only endpoints whose URL or description contains this text, ignoring case')
    .option('--metadata <key=value>', 'only endpoints with this metadata pair, exactly; repeat to require several', metadataOption, {})
    .action(async (o: { search?: string; metadata: Record<string, string> }) => {
      const filters: Record<string, string | undefined> = { search: o.search };
      for (const [k, v] of Object.entries(o.metadata)) filters[`metadata[${k}]`] = v;
      print({ body: await ctx.api().list<Endpoint>('/v1/endpoints', filters) }, (page) => show.endpointRows(page.data));
    });

  endpoints
    .command('get')
    .description('show one endpoint: state, failure streak, rate limit and slow-down, newest attempt')
    .argument('<id>', 'endpoint id')
    .action(async (endpointId: string) => print(await ctx.api().call<Endpoint>('GET', `/v1/endpoints/${id(endpointId)}`), show.endpointDetail));

  mutating(
    headerAndMetadataOptions(
      endpoints
        .command('create')
        .description('create an endpoint; its signing secret is printed once')
        .requiredOption('--url <url>', 'the https address that receives events')
        .requiredOption('--events <types>', 'comma-separated event types, e.g. alarm.created,alarm.resolved', eventTypeList)
        .option('--description <text>', 'what the endpoint is for')
        .option('--rate-limit <n|none>', 'send it at most n requests per second (1 to 10000); none (the default): no limit', rateLimit)
        .option('--scheme <herald|standard-webhooks>', 'how requests are signed: herald (the default) or standard-webhooks', scheme),
      false,
    ),
  ).action(async (o: { url: string; events: string[]; description?: string; rateLimit?: number | 'none'; scheme?: string; idempotencyKey?: string } & HeaderAndMetadataOptions) => {
    const res = await ctx.api().call<Endpoint & { secret: string }>('POST', '/v1/endpoints', {
      body: {
        url: o.url,
        event_types: o.events,
        ...(o.description !== undefined ? { description: o.description } : {}),
        ...rateLimitBody(o.rateLimit),
        ...headersAndMetadataBody(o),
        ...(o.scheme !== undefined ? { signature_scheme: o.scheme } : {}),
      },
      idempotencyKey: keyOf(o),
    });
    print(res, (e) => `${show.endpointDetail(e)}\n\n${show.secretShownOnce(e)}`);
  });

  mutating(
    headerAndMetadataOptions(
      endpoints
        .command('update')
        .description('change the address, the event types, the description, the rate limit, the custom headers, the metadata or the signature scheme; a new scheme comes with a new secret, printed once')
        .argument('<id>', 'endpoint id')
        .option('--url <url>', 'new https address')
        .option('--events <types>', 'new comma-separated event types (replaces the list)', eventTypeList)
        .option('--description <text>', 'new description')
        .option('--rate-limit <n|none>', 'send it at most n requests per second (1 to 10000); none removes the limit', rateLimit)
        .option('--scheme <herald|standard-webhooks>', 'sign with this scheme; a different one replaces the secret with a new one of its form, printed once', scheme),
      true,
    )
      .option('--clear-headers', 'remove every custom header')
      .option('--clear-metadata', 'remove all metadata'),
  ).action(
    async (
      endpointId: string,
      o: { url?: string; events?: string[]; description?: string; rateLimit?: number | 'none'; scheme?: string; idempotencyKey?: string } & HeaderAndMetadataOptions,
      command: Command,
    ) => {
      const body = {
        ...(o.url !== undefined ? { url: o.url } : {}),
        ...(o.events !== undefined ? { event_types: o.events } : {}),
        ...(o.description !== undefined ? { description: o.description } : {}),
        ...rateLimitBody(o.rateLimit),
        ...headersAndMetadataBody(o),
        ...(o.scheme !== undefined ? { signature_scheme: o.scheme } : {}),
      };
      if (Object.keys(body).length === 0) {
        command.error('error: nothing to update; give --url, --events, --description, --rate-limit, --scheme, --header, --secret-header, --metadata, --clear-headers or --clear-metadata');
      }
      const res = await ctx.api().call<Endpoint>('PATCH', `/v1/endpoints/${id(endpointId)}`, { body, idempotencyKey: keyOf(o) });
      print(res, (e) =>
        e.secret === undefined
          ? show.endpointDetail(e)
          : `${show.endpointDetail(e)}\n\n${show.secretShownOnce(e as Endpoint & { secret: string })}\nThe signature scheme changed, so the secret did: every request from now on is signed in the new scheme with this secret.`,
      );
    },
  );

  mutating(
    endpoints
      .command('delete')
      .description('delete an endpoint with its deliveries and attempt log (events stay)')
      .argument('<id>', 'endpoint id'),
  ).action(async (endpointId: string, o: { idempotencyKey?: string }) => {
    const res = await ctx.api().call<undefined>('DELETE', `/v1/endpoints/${id(endpointId)}`, { idempotencyKey: keyOf(o) });
    print(res, () => `deleted endpoint ${endpointId}, with its deliveries and attempt log`);
  });

  mutating(
    endpoints
      .command('rotate')
      .description('replace the signing secret; the new one is printed once and signs the very next request')
      .argument('<id>', 'endpoint id')
      .option(
        '--overlap <duration>',
        'keep the old secret valid this long (e.g. 30m, 24h, 7d; at most 7d): each request carries both signatures. Not for receivers that read the signature header as one single value',
        overlap,
      ),
  ).action(async (endpointId: string, o: { overlap?: number; idempotencyKey?: string }) => {
    const res = await ctx.api().call<Endpoint & { secret: string }>('POST', `/v1/endpoints/${id(endpointId)}/rotate-secret`, {
      ...(o.overlap !== undefined ? { body: { overlap_seconds: o.overlap } } : {}),
      idempotencyKey: keyOf(o),
    });
    print(res, (e) =>
      e.previous_secret_expires_at === null
        ? `${show.secretShownOnce(e)}\nThe old secret is discarded: every request from now on, retries included, is signed with the new one.`
        : `${show.secretShownOnce(e)}\nUntil ${e.previous_secret_expires_at}, every request carries two signatures, the new one first, so the receiver may verify with either secret; then the old one is erased. End the overlap sooner with: herald endpoints end-overlap ${e.id}`,
    );
  });

  mutating(
    endpoints
      .command('end-overlap')
      .description('end a rotation\'s overlap now: the old secret is erased and only the current one signs')
      .argument('<id>', 'endpoint id'),
  ).action(async (endpointId: string, o: { idempotencyKey?: string }) => {
    const res = await ctx.api().call<Endpoint>('DELETE', `/v1/endpoints/${id(endpointId)}/previous-secret`, { idempotencyKey: keyOf(o) });
    print(res, (e) => `Only the current secret (${e.secret_hint}) signs endpoint ${e.id} now; the old one is erased.`);
  });

  mutating(
    endpoints
      .command('test')
      .description('send one signed test event now and show the answer; exits with 1 when it failed')
      .argument('<id>', 'endpoint id')
      .option('--event-type <type>', 'send the catalog example of this type instead of a webhook.test event'),
  ).action(async (endpointId: string, o: { eventType?: string; idempotencyKey?: string }) => {
    const res = await ctx.api().call<Attempt & { request: { url: string } }>('POST', `/v1/endpoints/${id(endpointId)}/test`, {
      body: o.eventType !== undefined ? { event_type: o.eventType } : {},
      idempotencyKey: keyOf(o),
    });
    print(res, (a) => show.testResult({ id: endpointId }, a));
    if (res.body.outcome !== 'succeeded') process.exitCode = 1;
  });

  mutating(
    endpoints
      .command('enable')
      .description('re-enable an endpoint; its failure streak starts again from 0')
      .argument('<id>', 'endpoint id'),
  ).action(async (endpointId: string, o: { idempotencyKey?: string }) => {
    const res = await ctx.api().call<Endpoint>('POST', `/v1/endpoints/${id(endpointId)}/enable`, { idempotencyKey: keyOf(o) });
    print(
      res,
      (e) =>
        `endpoint ${e.id} is enabled; failure streak ${e.failure_streak} of ${e.failure_threshold}\n` +
        `Deliveries skipped while it was disabled stay skipped; send them with: herald endpoints recover ${e.id} --since <date-time>`,
    );
  });

  mutating(
    endpoints
      .command('disable')
      .description('stop sending to an endpoint; its pending deliveries become skipped, kept for recover')
      .argument('<id>', 'endpoint id')
      .option('--reason <text>', 'why, shown with the endpoint'),
  ).action(async (endpointId: string, o: { reason?: string; idempotencyKey?: string }) => {
    const res = await ctx.api().call<Endpoint>('POST', `/v1/endpoints/${id(endpointId)}/disable`, {
      body: o.reason !== undefined ? { reason: o.reason } : {},
      idempotencyKey: keyOf(o),
    });
    print(res, (e) => `endpoint ${e.id} is ${show.endpointState(e)}`);
  });

  mutating(
    endpoints
      .command('recover')
      .description('send again the failed and skipped deliveries created since a time (the endpoint must be enabled)')
      .argument('<id>', 'endpoint id')
      .requiredOption('--since <date-time>', 'a date-time with a zone, e.g. 2026-11-22T09:00:00Z')
      .option('--dry-run', 'only count them'),
  ).action(async (endpointId: string, o: { since: string; dryRun?: boolean; idempotencyKey?: string }) => {
    const res = await ctx.api().call<RecoverResult>('POST', `/v1/endpoints/${id(endpointId)}/recover`, {
      body: { since: o.since, dry_run: o.dryRun === true },
      idempotencyKey: keyOf(o),
    });
    print(res, (r) => show.recoverResult(endpointId, r));
  });

  withGlobalHelp(program.command('attempts'))
    .description("an endpoint's attempt log, newest first (the log keeps the last 100)")
    .argument('<endpoint-id>', 'endpoint id')
    .option('--failures', 'only attempts that failed (outcome retrying or failed)')
    .option('--limit <n>', `how many to show (default ${DEFAULT_LIMIT})`, positiveInteger)
    .action(async (endpointId: string, o: { failures?: boolean; limit?: number }) => {
      const page = await ctx.api().list<Attempt>(`/v1/endpoints/${id(endpointId)}/attempts`, { outcome: o.failures ? 'retrying,failed' : undefined }, o.limit ?? DEFAULT_LIMIT);
      print({ body: page }, (p) => show.attemptRows(p.data));
    });

  const events = withGlobalHelp(program.command('events')).description('events of the account of the API key, and their deliveries (through the API)');

  /** The search's options, shared by `events list`, `events count` and `replays create`. */
  const searchOptions = (command: Command) =>
    command
      .option('--id <ids>', 'only these comma-separated event ids')
      .option('--type <types>', 'only these comma-separated event types')
      .option('--since <date-time>', 'only events created at or after this time, e.g. 2026-11-22T00:00:00Z')
      .option('--until <date-time>', 'only events created before this time')
      .option('--endpoint <id>', 'only events with a delivery to this endpoint')
      .option('--state <states>', 'only events whose newest delivery (to --endpoint, or to any endpoint) is in one of these states: pending, succeeded, failed, skipped');
  type Search = { id?: string; type?: string; since?: string; until?: string; endpoint?: string; state?: string };
  const searchQuery = (o: Search) => ({ id: o.id, type: o.type, since: o.since, until: o.until, endpoint_id: o.endpoint, state: o.state });

  searchOptions(events.command('list').description('list (search) events, newest first'))
    .option('--limit <n>', `how many to show (default ${DEFAULT_LIMIT})`, positiveInteger)
    .action(async (o: Search & { limit?: number }) => {
      const page = await ctx.api().list<HeraldEvent>('/v1/events', searchQuery(o), o.limit ?? DEFAULT_LIMIT);
      print({ body: page }, (p) => show.eventRows(p.data));
    });

  searchOptions(events.command('count').description('count the events a search selects (exact up to 10,000)')).action(async (o: Search) =>
    print(await ctx.api().call<EventCount>('GET', '/v1/events/count', { query: searchQuery(o) }), show.eventCount),
  );

  events
    .command('get')
    .description('show an event with each delivery: its state and its attempts')
    .argument('<id>', 'event id')
    .action(async (eventId: string) => print(await ctx.api().call<EventDetail>('GET', `/v1/events/${id(eventId)}`), show.eventDetail));

  mutating(
    events
      .command('redeliver')
      .description('send an event to one endpoint again, now')
      .argument('<event-id>', 'event id')
      .requiredOption('--endpoint <id>', 'the endpoint to send it to (enabled, and subscribed to the event type)'),
  ).action(async (eventId: string, o: { endpoint: string; idempotencyKey?: string }) => {
    const res = await ctx.api().call<Delivery>('POST', `/v1/events/${id(eventId)}/redeliver`, { body: { endpoint_id: o.endpoint }, idempotencyKey: keyOf(o) });
    print(res, (d) => `event ${d.event_id} queued again: ${show.deliveryLine(d)}`);
  });

  const replays = withGlobalHelp(program.command('replays')).description('send past events again, in the background, and the record of replays (through the API)');

  mutating(
    searchOptions(
      replays
        .command('create')
        .description('replay the events a search selects (or --id); without --yes it only counts them')
        .option('--to <endpoint-id>', 'send to this endpoint only (default: every endpoint subscribed to each event type)')
        .option('--yes', 'create the replay; without it, a dry run that prints the count'),
    ),
  ).action(async (o: Search & { to?: string; yes?: boolean; idempotencyKey?: string }, command: Command) => {
    const filter = {
      ...(o.type !== undefined ? { types: eventTypeList(o.type) } : {}),
      ...(o.since !== undefined ? { since: o.since } : {}),
      ...(o.until !== undefined ? { until: o.until } : {}),
      ...(o.endpoint !== undefined ? { endpoint_id: o.endpoint } : {}),
      ...(o.state !== undefined ? { states: eventTypeList(o.state) } : {}),
    };
    if (o.id !== undefined && Object.keys(filter).length > 0) command.error('error: give --id, or search options (--type, --since, …), not both');
    const body = {
      ...(o.id !== undefined ? { event_ids: eventTypeList(o.id) } : { filter }),
      ...(o.to !== undefined ? { endpoint_id: o.to } : {}),
      dry_run: o.yes !== true,
    };
    const res = await ctx.api().call<Replay | ReplayPreview>('POST', '/v1/replays', { body, idempotencyKey: keyOf(o) });
    print(res, (r) => ('dry_run' in r ? `${show.replayPreview(r)}\nTo send them, run the same command with --yes.` : show.replayDetail(r)));
  });

  replays
    .command('list')
    .description('replays, newest first: who replayed what, and when')
    .option('--limit <n>', `how many to show (default ${DEFAULT_LIMIT})`, positiveInteger)
    .action(async (o: { limit?: number }) => print({ body: await ctx.api().list<Replay>('/v1/replays', {}, o.limit ?? DEFAULT_LIMIT) }, (p) => show.replayRows(p.data)));

  replays
    .command('get')
    .description('show a replay and its progress')
    .argument('<id>', 'replay id')
    .action(async (replayId: string) => print(await ctx.api().call<Replay>('GET', `/v1/replays/${id(replayId)}`), show.replayDetail));

  mutating(replays.command('cancel').description('stop a running replay; deliveries already created are still sent').argument('<id>', 'replay id')).action(
    async (replayId: string, o: { idempotencyKey?: string }) =>
      print(await ctx.api().call<Replay>('POST', `/v1/replays/${id(replayId)}/cancel`, { idempotencyKey: keyOf(o) }), show.replayDetail),
  );

  const portal = withGlobalHelp(program.command('portal-sessions').description('one-time links that open the panel embedded in your own pages (through the API)'));

  mutating(
    portal
      .command('create')
      .description('make a one-time link that opens the panel for the account of the API key, framed by the origins given')
      .requiredOption('--origin <origins>', 'comma-separated origins allowed to frame it, each https://host[:port]', eventTypeList)
      .option('--account <id>', 'the account (must be the API key\u2019s own)')
      .option('--read-only', 'the panel shows, but changes nothing')
      .option('--expires-in <minutes>', 'how long the link can be opened (default 5, at most 60)', positiveInteger)
      .option('--session-minutes <minutes>', 'how long the session lasts once opened (default 60, at most 720)', positiveInteger)
      .option('--accent-color <hex>', 'accent colour, #rgb or #rrggbb')
      .option('--logo-url <url>', 'https address of a logo shown instead of Herald\u2019s')
      .option('--hide-sign-out', 'hide the Sign out button'),
  ).action(
    async (o: {
      origin: string[];
      account?: string;
      readOnly?: boolean;
      expiresIn?: number;
      sessionMinutes?: number;
      accentColor?: string;
      logoUrl?: string;
      hideSignOut?: boolean;
      idempotencyKey?: string;
    }) => {
      const body = {
        allowed_origins: o.origin,
        ...(o.account !== undefined ? { account: o.account } : {}),
        ...(o.readOnly ? { read_only: true } : {}),
        ...(o.expiresIn !== undefined ? { expires_in_minutes: o.expiresIn } : {}),
        ...(o.sessionMinutes !== undefined ? { session_minutes: o.sessionMinutes } : {}),
        ...(o.accentColor !== undefined ? { accent_color: o.accentColor } : {}),
        ...(o.logoUrl !== undefined ? { logo_url: o.logoUrl } : {}),
        ...(o.hideSignOut ? { hide_sign_out: true } : {}),
      };
      const res = await ctx.api().call<PortalLink>('POST', '/v1/portal-sessions', { body, idempotencyKey: keyOf(o) });
      print(res, show.portalLink);
    },
  );
}
