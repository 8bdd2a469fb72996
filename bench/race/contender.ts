/**
 * What every contender of the race shares: its settings from the race, the
 * event bodies, the signed request, and the race's protocol. A contender is
 * a process of its own: it makes its store and queues the whole backlog
 * (durably, as it would in production), says it is ready, and starts sending
 * when the race says go; the race counts the receipts and stops it.
 */
import { randomUUID } from 'node:crypto';
import { Agent, request } from 'undici';
import { buildRequestHeaders } from '../../packages/server/src/core/request-headers.ts';
import { logisticsEvents } from '../workload.ts';

export const settings = {
  /** The receiver's address, to which every request goes. */
  url: process.env.RACE_URL!,
  /** The backlog: deliveries queued before the contender starts (none in the steady phase). */
  deliveries: Number(process.env.RACE_DELIVERIES),
  /** The steady phase: events queued one at a time at this rate while the contender sends (0: no steady phase). */
  rate: Number(process.env.RACE_RATE ?? 0),
  /** For how long, in seconds. */
  seconds: Number(process.env.RACE_SECONDS ?? 0),
  /** Requests in flight at most, where the contender lets one set it: Herald's per-origin cap. */
  concurrency: Number(process.env.RACE_CONCURRENCY),
  databaseUrl: process.env.RACE_DATABASE_URL ?? '',
  redisUrl: process.env.RACE_REDIS_URL ?? '',
  /** The hanging phase: an endpoint of another origin that never answers, which every HANG_EVERY-th delivery of the backlog goes to. */
  hangUrl: process.env.RACE_HANG_URL ?? '',
};

/** In the hanging phase, one delivery in this many goes to the endpoint that never answers. */
export const HANG_EVERY = 10;
/** How long a request may take, as Herald allows one (10 s), for every contender. */
export const REQUEST_TIMEOUT_MS = 10_000;

/** Whether the backlog's `i`-th delivery is, in the hanging phase, one for the endpoint that never answers. */
export const forTheHangingEndpoint = (i: number) => i % HANG_EVERY === HANG_EVERY - 1;

/** Where the backlog's `i`-th delivery goes: the receiver, or in the hanging phase, one in HANG_EVERY to the endpoint that never answers. */
export function destination(i: number): string {
  return settings.hangUrl && forTheHangingEndpoint(i) ? settings.hangUrl : settings.url;
}

/** The signing secret every contender signs with, as Herald would sign for an endpoint. */
const SECRET = 'whsec_race';

/** Events as JSON texts in Herald's envelope, `created_at` being when each is made. */
function* bodies(): Generator<string> {
  for (const e of logisticsEvents()) yield JSON.stringify({ id: randomUUID(), type: e.type, created_at: new Date().toISOString(), data: e.data });
}

/** The backlog's events, as JSON texts in Herald's envelope (`created_at` is when it was queued). */
export function backlog(n: number): string[] {
  const made = bodies();
  return Array.from({ length: n }, () => made.next().value as string);
}

/** Herald's headers for one attempt of `body`, signed now. */
export function signed(body: string): Record<string, string> {
  const { id, type } = JSON.parse(body) as { id: string; type: string };
  return buildRequestHeaders({ eventType: type, eventId: id, attemptId: randomUUID(), timestamp: Math.floor(Date.now() / 1000), body: Buffer.from(body), secret: SECRET });
}

/** One attempt through undici: its status, or why it got none. Never throws. */
export async function send(agent: Agent, body: string, url = settings.url): Promise<{ status: number | null; error: string | null }> {
  try {
    const res = await request(url, { method: 'POST', dispatcher: agent, headers: signed(body), body, headersTimeout: REQUEST_TIMEOUT_MS, bodyTimeout: REQUEST_TIMEOUT_MS });
    await res.body.dump();
    return { status: res.statusCode, error: null };
  } catch (err) {
    return { status: null, error: (err as Error).message };
  }
}

/** undici with Herald's connections per origin, the client most peers would use. */
export function agent(): Agent {
  return new Agent({ connections: settings.concurrency });
}

/** The steady phase's events, `rate` a second for `seconds`, each queued (`publish`) as it is made. */
export async function steadily(rate: number, seconds: number, publish: (body: string) => Promise<unknown>): Promise<void> {
  const total = rate * seconds;
  const made = bodies();
  const start = Date.now();
  // Whatever is due, then 2 ms: setTimeout cannot wait 1 ms a thousand times a second.
  for (let sent = 0; sent < total; ) {
    const due = Math.min(total, Math.floor(((Date.now() - start) * rate) / 1000) + 1);
    for (; sent < due; sent++) void publish(made.next().value as string).catch((err: unknown) => console.error(err));
    await new Promise((r) => setTimeout(r, 2));
  }
}

/**
 * Runs a contender: `prepare` makes its store and queues the backlog, `start`
 * begins sending, and in the steady phase `publish` queues each event as it
 * comes; the race ends the process.
 */
export function contend(prepare: () => Promise<void>, start: () => Promise<void> | void, publish: (body: string) => Promise<unknown>): void {
  prepare().then(
    () => {
      // Listening keeps the process (and its peak memory) until the race ends it.
      let started = false;
      process.on('message', () => {
        if (!started) void Promise.resolve(start()).then(() => (settings.rate > 0 ? steadily(settings.rate, settings.seconds, publish) : undefined));
        started = true;
      });
      process.send!({ ready: true });
    },
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
