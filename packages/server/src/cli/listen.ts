import { Command, InvalidArgumentError } from 'commander';
import { ConfigError } from '../errors.ts';
import { mintServerCertificate, readDevCa } from '../dev/dev-ca.ts';
import type { ApiClient } from './api-client.ts';
import { registerListenEndpoint, type ListenEndpoint } from './listen-endpoint.ts';
import { startListenReceiver, type ListenReceiver, type ReceivedDelivery } from './listen-receiver.ts';

/**
 * `herald listen`: receive this account's webhooks on this machine, as
 * `stripe listen` does for Stripe. It needs a Herald started with --dev on
 * the same data directory: that Herald sends to loopback and trusts the
 * development CA that signs this command's certificate.
 */
export interface ListenContext {
  api(): ApiClient;
  json(): boolean;
  /** --data-dir / HERALD_DATA_DIR, resolved as `herald start` resolves it. */
  dataDir(): string;
}

/** Fixed, so the endpoint (and its secret) is the same on every run. */
export const DEFAULT_LISTEN_PORT = 8443;

function port(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) > 65535) throw new InvalidArgumentError('must be a port number, 0 to 65535 (0: any free port).');
  return Number(value);
}

function forwardUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InvalidArgumentError('must be a URL such as http://localhost:3000/webhooks.');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new InvalidArgumentError('must be an http:// or https:// URL.');
  return url.toString();
}

function eventTypeList(value: string): string[] {
  const types = value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (types.length === 0) throw new InvalidArgumentError('give at least one event type, e.g. alarm.created,alarm.resolved.');
  return types;
}

function indent(text: string): string {
  return text.replace(/^/gm, '  ');
}

/** How a delivery looks in the terminal (scripts use --json). */
export function deliveryText(d: ReceivedDelivery): string {
  const lines = [`${d.received_at}  ${d.event_type ?? '(no event type)'}  event ${d.event_id ?? '-'}  delivery ${d.delivery_id ?? '-'}`];
  for (const [name, value] of Object.entries(d.headers)) lines.push(`  ${name}: ${value}`);
  lines.push(indent(typeof d.body === 'string' ? d.body : JSON.stringify(d.body, null, 2)));
  lines.push(d.signature.verified ? '  signature: verified' : `  signature: NOT VERIFIED: ${d.signature.code}: ${d.signature.reason}`);
  if (d.forward) {
    const outcome = 'status' in d.forward ? `${d.forward.status}` : `failed: ${d.forward.error}`;
    lines.push(`  forwarded to ${d.forward.url}: ${outcome} (${d.forward.duration_ms} ms); answered Herald ${d.answered}`);
  } else {
    lines.push(`  answered Herald ${d.answered}`);
  }
  return `${lines.join('\n')}\n`;
}

function readyText(r: ListenEndpoint, url: string, forwardTo: string | undefined, dataDir: string): string {
  const { endpoint } = r;
  const was = r.how === 'created' ? 'registered' : r.how === 'rotated' ? 'reused (new signing secret)' : 'reused';
  return [
    `Endpoint ${endpoint.id} ${was}: ${url}`,
    `Events: ${endpoint.event_types.join(', ')}`,
    `Signing secret: ${r.secret}  (kept in ${dataDir}/listen/${endpoint.id}.secret; the same on every run)`,
    `Ready! ${forwardTo ? `Forwarding to ${forwardTo}.` : 'Printing each delivery (add --forward-to to pass them to your app).'} Ctrl-C to stop.`,
    '',
  ].join('\n');
}

async function allEventTypes(api: ApiClient): Promise<string[]> {
  const { data } = await api.list<{ name: string }>('/v1/event-types');
  return data.map((t) => t.name);
}

async function listen(ctx: ListenContext, o: { events?: string[]; forwardTo?: string; port: number }): Promise<void> {
  const api = ctx.api();
  const dataDir = ctx.dataDir();
  const json = ctx.json();
  const tls = await mintServerCertificate(readDevCa(dataDir));
  // Listening for Ctrl-C before anything is printed: a signal that came
  // between "Ready!" and a handler would end the process the default way.
  // The first one stops cleanly (once the endpoint is registered); a second
  // one, say while the API does not answer, stops at once.
  let signals = 0;
  const interrupted = new Promise<void>((resolve) => {
    const onSignal = () => (++signals === 1 ? resolve() : process.exit(130));
    process.on('SIGINT', onSignal).on('SIGTERM', onSignal);
  });

  let learnSecret!: (secret: string) => void;
  const secret = new Promise<string>((resolve) => (learnSecret = resolve));
  let receiver: ListenReceiver;
  try {
    receiver = await startListenReceiver({
      cert: tls.certPem,
      key: tls.keyPem,
      port: o.port,
      secret: () => secret,
      forwardTo: o.forwardTo,
      onDelivery: (d) => console.log(json ? JSON.stringify(d) : deliveryText(d)),
    });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      throw new ConfigError('--port', `127.0.0.1:${o.port} is in use (another herald listen?); choose another port`);
    }
    throw err;
  }
  const stop = () => receiver.close().then(() => undefined);
  try {
    const url = `https://localhost:${receiver.port}/`;
    const registered = await registerListenEndpoint(api, { url, eventTypes: o.events ?? (await allEventTypes(api)), dataDir });
    learnSecret(registered.secret);
    // With --json, stdout holds only deliveries.
    (json ? console.error : console.log)(readyText(registered, url, o.forwardTo, dataDir));
    await interrupted;
    await stop();
    console.error(`Stopped. Endpoint ${registered.endpoint.id} stays registered; run herald listen --port ${receiver.port} again to reuse it, or delete it with: herald endpoints delete ${registered.endpoint.id}`);
  } catch (err) {
    await stop();
    throw err;
  }
}

export function registerListenCommand(program: Command, ctx: ListenContext): void {
  program
    .command('listen')
    .description("receive this account's webhooks on this machine: print each delivery, check its signature, and optionally forward it to your app")
    .addHelpText(
      'after',
      `
Needs a Herald started with: herald start --dev (same --data-dir), which sends to
loopback addresses and trusts the development CA that signs this command's certificate.

It registers an endpoint at https://localhost:<port>/ (or reuses the one already there,
updating its event types), receives on 127.0.0.1, and prints each delivery: headers, body,
and whether the signature verified. With --forward-to it also POSTs the same body and
headers to your app and answers Herald with your app's status (a 5xx or no answer: 502,
so Herald retries). With --json, each delivery is one JSON object on standard output
and everything else goes to standard error. Ctrl-C stops it; the endpoint stays
registered, with its signing secret kept in <data-dir>/listen/, so the next run on the
same port reuses both.`,
    )
    .configureHelp({ showGlobalOptions: true })
    .option('--events <types>', 'comma-separated event types (default: every type in the catalog)', eventTypeList)
    .option('--forward-to <url>', 'also POST each delivery to this http(s) URL, e.g. http://localhost:3000/webhooks', forwardUrl)
    .option('--port <n>', `port to receive on, on 127.0.0.1 (0: any free port)`, port, DEFAULT_LISTEN_PORT)
    .action((o: { events?: string[]; forwardTo?: string; port: number }) => listen(ctx, o));
}
