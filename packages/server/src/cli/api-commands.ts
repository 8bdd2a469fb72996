import { Command, InvalidArgumentError } from 'commander';
import { randomUUID } from 'node:crypto';
import type { ApiClient, ApiResponse } from './api-client.ts';
import * as show from './api-output.ts';
import type { Attempt, Delivery, Endpoint, EventDetail, HeraldEvent, RecoverResult } from './api-output.ts';

/**
 * `herald endpoints|attempts|events`: a mirror of the management API for
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
    .description('list every endpoint, oldest first')
    .action(async () => print({ body: await ctx.api().list<Endpoint>('/v1/endpoints') }, (page) => show.endpointRows(page.data)));

  endpoints
    .command('get')
    .description('show one endpoint: state, failure streak, rate limit and slow-down, newest attempt')
    .argument('<id>', 'endpoint id')
    .action(async (endpointId: string) => print(await ctx.api().call<Endpoint>('GET', `/v1/endpoints/${id(endpointId)}`), show.endpointDetail));

  mutating(
    endpoints
      .command('create')
      .description('create an endpoint; its signing secret is printed once')
      .requiredOption('--url <url>', 'the https address that receives events')
      .requiredOption('--events <types>', 'comma-separated event types, e.g. alarm.created,alarm.resolved', eventTypeList)
      .option('--description <text>', 'what the endpoint is for')
      .option('--rate-limit <n|none>', 'send it at most n requests per second (1 to 10000); none (the default): no limit', rateLimit)
      .option('--scheme <herald|standard-webhooks>', 'how requests are signed: herald (the default) or standard-webhooks', scheme),
  ).action(async (o: { url: string; events: string[]; description?: string; rateLimit?: number | 'none'; scheme?: string; idempotencyKey?: string }) => {
    const res = await ctx.api().call<Endpoint & { secret: string }>('POST', '/v1/endpoints', {
      body: {
        url: o.url,
        event_types: o.events,
        ...(o.description !== undefined ? { description: o.description } : {}),
        ...rateLimitBody(o.rateLimit),
        ...(o.scheme !== undefined ? { signature_scheme: o.scheme } : {}),
      },
      idempotencyKey: keyOf(o),
    });
    print(res, (e) => `${show.endpointDetail(e)}\n\n${show.secretShownOnce(e)}`);
  });

  mutating(
    endpoints
      .command('update')
      .description('change the address, the event types, the description, the rate limit or the signature scheme; a new scheme comes with a new secret, printed once')
      .argument('<id>', 'endpoint id')
      .option('--url <url>', 'new https address')
      .option('--events <types>', 'new comma-separated event types (replaces the list)', eventTypeList)
      .option('--description <text>', 'new description')
      .option('--rate-limit <n|none>', 'send it at most n requests per second (1 to 10000); none removes the limit', rateLimit)
      .option('--scheme <herald|standard-webhooks>', 'sign with this scheme; a different one replaces the secret with a new one of its form, printed once', scheme),
  ).action(
    async (
      endpointId: string,
      o: { url?: string; events?: string[]; description?: string; rateLimit?: number | 'none'; scheme?: string; idempotencyKey?: string },
      command: Command,
    ) => {
      const body = {
        ...(o.url !== undefined ? { url: o.url } : {}),
        ...(o.events !== undefined ? { event_types: o.events } : {}),
        ...(o.description !== undefined ? { description: o.description } : {}),
        ...rateLimitBody(o.rateLimit),
        ...(o.scheme !== undefined ? { signature_scheme: o.scheme } : {}),
      };
      if (Object.keys(body).length === 0) command.error('error: nothing to update; give --url, --events, --description, --rate-limit or --scheme');
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

  events
    .command('list')
    .description('list events, newest first')
    .option('--type <types>', 'only these comma-separated event types')
    .option('--since <date-time>', 'only events created at or after this time, e.g. 2026-11-22T00:00:00Z')
    .option('--until <date-time>', 'only events created before this time')
    .option('--limit <n>', `how many to show (default ${DEFAULT_LIMIT})`, positiveInteger)
    .action(async (o: { type?: string; since?: string; until?: string; limit?: number }) => {
      const page = await ctx.api().list<HeraldEvent>('/v1/events', { type: o.type, since: o.since, until: o.until }, o.limit ?? DEFAULT_LIMIT);
      print({ body: page }, (p) => show.eventRows(p.data));
    });

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
}
