/**
 * `npm run bench -- --race`: Herald against the senders people would
 * otherwise pick, on the same machine and the same HTTPS receiver, each
 * draining the same backlog of signed deliveries. Every contender does the
 * same durable work: the backlog is in its store before it starts, each
 * attempt is recorded there, each request is signed. Rounds are interleaved
 * (each round runs every contender once, in a rotated order) and each figure
 * is the median over the rounds.
 *
 * The backlog is measured from the first request the receiver gets to the
 * last, so that start-up is left out alike: deliveries per second, and CPU
 * time per 1,000 deliveries of the contender's processes, of its store (the
 * PostgreSQL backends serving its database, or its Redis server) and of the
 * whole machine; also peak memory of the contender's processes. Then, with a
 * fresh store, events are queued one at a time at a steady rate while the
 * contender sends, and publish-to-receipt latency is measured. Last, with a
 * fresh store again, one delivery in ten of the backlog goes to an endpoint
 * of another origin that never answers, and the deliveries to the receiver
 * are counted for at most `--hang-seconds` from the first.
 *
 *   npm run bench -- --race --deliveries 20000 --rounds 3 --rate 1000 --hang-seconds 20
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { apiClient, CA, herald, nodeArgs, peakRssMiB, percentile, setupAccount, startReceiver, stopProcess, type Receiver } from './harness.ts';
import { backlog, forTheHangingEndpoint, HANG_EVERY, steadily } from './race/contender.ts';
import { CLK_TCK, cpuMs, machineTicks } from './proc-cpu.ts';

const { values: opts } = parseArgs({
  options: {
    race: { type: 'boolean' },
    deliveries: { type: 'string', default: '20000' },
    rounds: { type: 'string', default: '3' },
    contenders: { type: 'string', default: 'ceiling,herald-postgres,herald-postgres-one,herald-embedded,pg-boss,bullmq,bullmq-aof,naive' },
    /** The steady phase: events queued one at a time at this rate, for warm-up and then measured seconds. */
    rate: { type: 'string', default: '1000' },
    warmup: { type: 'string', default: '3' },
    seconds: { type: 'string', default: '10' },
    /** The hanging phase: deliveries to the receiver are counted for at most this long from the first (0: no hanging phase). */
    'hang-seconds': { type: 'string', default: '20' },
    'database-url': { type: 'string', default: process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres' },
  },
});
const DELIVERIES = Number(opts.deliveries);
const RATE = Number(opts.rate);
const WARMUP = Number(opts.warmup);
const SECONDS = Number(opts.seconds);
const HANG_SECONDS = Number(opts['hang-seconds']);
/**
 * A race phase: the backlog drained; events queued one at a time at a steady
 * rate while the contender sends; or the backlog again with one delivery in
 * ten for an endpoint that never answers.
 */
type Phase = 'backlog' | 'steady' | 'hanging';
/** Herald's default cap of requests in flight to one origin; the peers get as many. */
const CONCURRENCY = 64;
const REDIS_PORT = 6390;

interface Measured {
  rate: number;
  /** CPU ms per 1,000 deliveries. */
  own: number;
  store: number;
  receiver: number;
  machine: number;
  rssMiB: number;
}

/** What a contender runs on, and how to start it once its backlog is queued. */
interface Running {
  /** The contender's own processes. */
  pids(): number[];
  /** Its store's processes (PostgreSQL backends, a Redis server); empty when the store is in its own process. */
  storePids(): Promise<number[]>;
  go(): Promise<void>;
  /** Herald's API, to publish the steady phase's events through; the peers queue theirs themselves. */
  publish?(body: string): Promise<unknown>;
  /** Why a process of the contender ended before the race stopped it, if one did. */
  failure(): string | undefined;
  stop(): Promise<void>;
}

/** Watches processes for an exit the race did not ask for. */
function watch(children: ChildProcess[]): { add(child: ChildProcess): void; failure(): string | undefined; stopping(): void } {
  let failure: string | undefined;
  let stopping = false;
  const add = (child: ChildProcess) =>
    child.once('exit', (code, signal) => {
      if (!stopping) failure ??= `a process exited (${code ?? signal}) before the race ended`;
    });
  children.forEach(add);
  return { add, failure: () => failure, stopping: () => void (stopping = true) };
}

const machineBusyMs = () => (machineTicks().busy * 1000) / CLK_TCK;

/** A database of the race's own on the PostgreSQL server; `drop` removes it. */
async function scratchDatabase(tag: string) {
  const name = `race_${tag.replace(/\W/g, '_')}_${process.pid}`;
  // Before the database exists: an address that cannot be parsed must not leave one behind.
  const url = new URL(opts['database-url']!);
  url.pathname = `/${name}`;
  const admin = new pg.Client({ connectionString: opts['database-url'] });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${name}`);
  return {
    url: url.toString(),
    backends: async () => (await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1', [name])).rows.map((r) => r.pid),
    drop: async () => {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    },
  };
}

const portOpen = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = createConnection(port, '127.0.0.1');
    socket.once('connect', () => (socket.end(), resolve(true))).once('error', () => resolve(false));
  });

/** A Redis server of the race's own, keeping nothing on disk or (`aof`) appending every write to its log, fsynced every second. */
async function redisServer(aof: boolean) {
  const dir = mkdtempSync(join(tmpdir(), 'race-redis-'));
  const child = spawn('redis-server', ['--port', String(REDIS_PORT), '--bind', '127.0.0.1', '--save', '', '--dir', dir, '--appendonly', aof ? 'yes' : 'no', '--appendfsync', 'everysec'], { stdio: 'ignore' });
  // Up once it takes connections; `redis-server` takes well under a second.
  for (let i = 0; !(await portOpen(REDIS_PORT)); i++) {
    if (i > 100) throw new Error('redis-server did not start');
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url: `redis://127.0.0.1:${REDIS_PORT}`,
    pid: child.pid!,
    stop: async () => {
      await new Promise<void>((r) => (child.exitCode !== null ? r() : (child.once('exit', () => r()), child.kill('SIGTERM'))));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A peer's process (bench/race/<name>.ts): it queues its backlog, says it is ready, and sends on `go`. */
async function peer(name: string, phase: Phase, receiver: Receiver, store: { databaseUrl?: string; redisUrl?: string }): Promise<{ child: ChildProcess; go(): void }> {
  const child = fork(fileURLToPath(new URL(`race/${name}.ts`, import.meta.url)), {
    execArgv: nodeArgs,
    env: {
      ...process.env,
      NODE_EXTRA_CA_CERTS: CA,
      RACE_URL: `https://localhost:${receiver.port}/race`,
      RACE_HANG_URL: phase === 'hanging' ? `https://localhost:${receiver.hangPort}/race` : '',
      RACE_DELIVERIES: String(phase === 'steady' ? 0 : DELIVERIES),
      RACE_RATE: String(phase === 'steady' ? RATE : 0),
      RACE_SECONDS: String(WARMUP + SECONDS),
      RACE_CONCURRENCY: String(CONCURRENCY),
      RACE_DATABASE_URL: store.databaseUrl ?? '',
      RACE_REDIS_URL: store.redisUrl ?? '',
    },
  });
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve());
    child.once('exit', (code) => reject(new Error(`${name} exited ${code} before it was ready`)));
  });
  return { child, go: () => child.send('go') };
}

/**
 * Herald on `engine`: the backlog is published through an API-only process,
 * then the deliverers start. `split`: the API stays up and a worker process
 * joins it (PostgreSQL, as production runs it); otherwise the publisher makes
 * way for `herald start`, API and dispatcher in one process (the default,
 * and the embedded engine's only way).
 */
async function heraldContender(engine: 'postgres' | 'embedded', split: boolean, phase: Phase, receiver: Receiver): Promise<Running> {
  const env: Record<string, string> = { HERALD_PORT: '0', HERALD_ALLOWED_NETWORKS: '127.0.0.0/8' };
  const cleanups: Array<() => Promise<void> | void> = [];
  let storePids = async (): Promise<number[]> => [];
  if (engine === 'embedded') {
    const dir = mkdtempSync(join(tmpdir(), 'race-herald-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    env.HERALD_DATA_DIR = dir;
  } else {
    const db = await scratchDatabase('herald');
    cleanups.push(db.drop);
    storePids = db.backends;
    env.DATABASE_URL = db.url;
    env.HERALD_ENCRYPTION_KEY = randomBytes(32).toString('base64');
  }
  const key = await setupAccount(env);
  const api = apiClient();
  const publisher = await herald(['start', '--role', 'api'], env);
  const all = ['alarm.created', 'alarm.resolved', 'shipment.created', 'shipment.completed'];
  await api.call(publisher.url, key, '/v1/endpoints', { url: `https://localhost:${receiver.port}/race`, event_types: all });
  // The hanging phase: the endpoint that never answers belongs to an account
  // of its own, so that each event goes to one endpoint or the other, in the
  // order the peers queue theirs.
  const hangKey = phase === 'hanging' ? await setupAccount(env) : undefined;
  if (hangKey) await api.call(publisher.url, hangKey, '/v1/endpoints', { url: `https://localhost:${receiver.hangPort}/race`, event_types: all });
  const events = backlog(phase === 'steady' ? 0 : DELIVERIES).map((b, i) => {
    const { type, data } = JSON.parse(b) as { type: string; data: unknown };
    return { type, data, hangs: hangKey !== undefined && forTheHangingEndpoint(i) };
  });
  for (let i = 0; i < events.length; i += 100) {
    const batch = events.slice(i, i + 100);
    for (const [k, hangs] of [[key, false], [hangKey, true]] as const) {
      const mine = batch.filter((e) => e.hangs === hangs).map(({ type, data }) => ({ type, data }));
      if (k && mine.length > 0) await api.call(publisher.url, k, '/v1/events/batch', { events: mine });
    }
  }
  let apiUrl = publisher.url;
  const processes: ChildProcess[] = [];
  if (split) processes.push(publisher.child);
  else await stopProcess(publisher.child);
  const watched = watch(processes);
  return {
    pids: () => processes.map((p) => p.pid!),
    storePids,
    go: async () => {
      const started = await herald(split ? ['start', '--role', 'worker'] : ['start'], env);
      processes.push(started.child);
      watched.add(started.child);
      if (!split) apiUrl = started.url;
    },
    publish: (body) => {
      const { type, data } = JSON.parse(body) as { type: string; data: unknown };
      return api.call(apiUrl, key, '/v1/events', { type, data });
    },
    failure: watched.failure,
    stop: async () => {
      watched.stopping();
      await api.close();
      for (const p of processes) await stopProcess(p);
      for (const c of cleanups.reverse()) await c();
    },
  };
}

async function peerContender(name: string, phase: Phase, receiver: Receiver): Promise<Running> {
  const cleanups: Array<() => Promise<void> | void> = [];
  let storePids = async (): Promise<number[]> => [];
  const store: { databaseUrl?: string; redisUrl?: string } = {};
  if (name === 'naive' || name === 'pg-boss') {
    const db = await scratchDatabase(name);
    cleanups.push(db.drop);
    storePids = db.backends;
    store.databaseUrl = db.url;
  } else if (name.startsWith('bullmq')) {
    const redis = await redisServer(name === 'bullmq-aof');
    cleanups.push(redis.stop);
    storePids = async () => [redis.pid];
    store.redisUrl = redis.url;
  }
  const p = await peer(name === 'bullmq-aof' ? 'bullmq' : name, phase, receiver, store);
  const watched = watch([p.child]);
  return {
    pids: () => [p.child.pid!],
    storePids,
    go: async () => p.go(),
    failure: watched.failure,
    stop: async () => {
      watched.stopping();
      p.child.kill('SIGKILL');
      for (const c of cleanups.reverse()) await c();
    },
  };
}

/** The contender and receiver running now, so that an interrupted race stops its processes and drops its database too. */
const active = new Set<() => Promise<void>>();
for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) {
  process.once(signal, () => {
    void (async () => {
      for (const stop of active) await stop().catch(() => undefined);
      process.exit(code);
    })();
  });
}

async function contender(name: string, phase: Phase, receiver: Receiver): Promise<Running> {
  const running = await (name.startsWith('herald-')
    ? heraldContender(name === 'herald-embedded' ? 'embedded' : 'postgres', name === 'herald-postgres', phase, receiver)
    : peerContender(name, phase, receiver));
  const stop = running.stop;
  const stopOnce = async () => {
    active.delete(stopOnce);
    await stop();
  };
  active.add(stopOnce);
  return { ...running, stop: stopOnce };
}

/** Waits until the receiver has had `n` requests, calling `onFirst` at its first; fails if a process of the contender ended, or after 15 minutes. */
async function received(name: string, receiver: Receiver, running: Running, n: number, onFirst: () => Promise<void> = async () => {}): Promise<void> {
  const deadline = Date.now() + 15 * 60_000;
  let first = true;
  for (;;) {
    const { count } = await receiver.stats();
    if (count > 0 && first) {
      first = false;
      await onFirst();
    }
    if (count >= n) return;
    const failure = running.failure();
    if (failure) throw new Error(`${name}: ${failure}, after ${count} of ${n} deliveries`);
    if (Date.now() > deadline) throw new Error(`${name}: only ${count} of ${n} deliveries arrived in 15 minutes`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** One contender, one backlog: measured from the receiver's first request to its last. */
async function raceOne(name: string): Promise<Measured> {
  const receiver = await startReceiver(1);
  let running: Running | undefined;
  try {
    running = await contender(name, 'backlog', receiver);
    await running.go();
    const snapshot = async () => ({
      own: cpuMs(running!.pids()),
      store: cpuMs(await running!.storePids()),
      receiver: cpuMs([receiver.child.pid!]),
      machine: machineBusyMs(),
    });
    let first: Awaited<ReturnType<typeof snapshot>> | undefined;
    await received(name, receiver, running, DELIVERIES, async () => void (first = await snapshot()));
    const last = await snapshot();
    const stats = await receiver.stats();
    const per = (ms: number) => (ms * 1000) / DELIVERIES;
    return {
      rate: (DELIVERIES - 1) / ((stats.last - stats.first) / 1000),
      own: per(last.own - first!.own),
      store: per(last.store - first!.store),
      receiver: per(last.receiver - first!.receiver),
      machine: per(last.machine - first!.machine),
      rssMiB: running.pids().reduce((sum, pid) => sum + peakRssMiB(pid), 0),
    };
  } finally {
    await running?.stop();
    receiver.child.kill();
  }
}

/**
 * One contender at a steady rate: events queued one at a time (Herald's
 * through its API, the peers' by their own process) while it sends.
 * Publish-to-receipt: the receiver's clock minus the event's `created_at`,
 * for the events made after the warm-up.
 */
async function steadyOne(name: string): Promise<{ p50: number; p99: number }> {
  const receiver = await startReceiver(1);
  let running: Running | undefined;
  try {
    running = await contender(name, 'steady', receiver);
    await running.go();
    const measureFrom = Date.now() + WARMUP * 1000;
    if (running.publish) await steadily(RATE, WARMUP + SECONDS, running.publish);
    await received(name, receiver, running, RATE * (WARMUP + SECONDS));
    const stats = await receiver.stats(true);
    const measured = stats.latencies.filter((_, i) => stats.created[i]! >= measureFrom);
    return { p50: percentile(measured, 50), p99: percentile(measured, 99) };
  } finally {
    await running?.stop();
    receiver.child.kill();
  }
}

/**
 * One contender, the backlog again, with one delivery in HANG_EVERY for an
 * endpoint of another origin that takes requests and never answers (each
 * contender gives up on a request after 10 s, as Herald does). The
 * deliveries to the receiver are counted from the first for HANG_SECONDS,
 * or until all have arrived: their rate, set against the contender's rate
 * without the hanging endpoint, is what that endpoint costs the others.
 */
async function hangingOne(name: string): Promise<number> {
  const receiver = await startReceiver(1, true);
  let running: Running | undefined;
  try {
    running = await contender(name, 'hanging', receiver);
    await running.go();
    const healthy = DELIVERIES - Math.floor(DELIVERIES / HANG_EVERY);
    const deadline = Date.now() + 15 * 60_000;
    for (;;) {
      const stats = await receiver.stats();
      const drained = stats.count >= healthy;
      if (drained || (stats.count > 0 && Date.now() - stats.first >= HANG_SECONDS * 1000)) {
        if (stats.hung === 0) throw new Error(`${name}: the endpoint that never answers got no request`);
        // All arrived: from the first to the last. The window ran out: all of it, stalls included.
        const until = drained ? stats.last : Date.now();
        return (stats.count - 1) / ((until - stats.first) / 1000);
      }
      const failure = running.failure();
      if (failure) throw new Error(`${name}: ${failure}, after ${stats.count} of ${healthy} deliveries`);
      if (Date.now() > deadline) throw new Error(`${name}: only ${stats.count} of ${healthy} deliveries arrived in 15 minutes`);
      await new Promise((r) => setTimeout(r, 20));
    }
  } finally {
    await running?.stop();
    receiver.child.kill();
  }
}

const contenders = opts.contenders!.split(',');
const rounds = Number(opts.rounds);
const results = new Map<string, Measured[]>(contenders.map((c) => [c, []]));
const latencies = new Map<string, Array<{ p50: number; p99: number }>>(contenders.map((c) => [c, []]));
/** Each round's rate to the others with the hanging endpoint, and its share of that round's rate without it (the machine's speed drifts between rounds). */
const hanging = new Map<string, Array<{ rate: number; share: number }>>(contenders.map((c) => [c, []]));
// The ceiling has no queue: a request to an endpoint that never answers holds only its own connection.
const hangs = (name: string) => HANG_SECONDS > 0 && name !== 'ceiling';
for (let round = 0; round < rounds; round++) {
  // Rotated each round, so that no contender always runs first, or after the same one.
  const order = contenders.map((_, i) => contenders[(i + round) % contenders.length]!);
  for (const name of order) {
    const m = await raceOne(name);
    results.get(name)!.push(m);
    console.log(`round ${round + 1}, ${name}: ${Math.round(m.rate)} deliveries/s, CPU ms per 1,000: own ${Math.round(m.own)}, store ${Math.round(m.store)}, receiver ${Math.round(m.receiver)}, machine ${Math.round(m.machine)}`);
    if (RATE > 0) {
      const l = await steadyOne(name);
      latencies.get(name)!.push(l);
      console.log(`round ${round + 1}, ${name} at ${RATE} events/s: publish-to-receipt p50 ${l.p50} ms, p99 ${l.p99} ms`);
    }
    if (hangs(name)) {
      const rate = await hangingOne(name);
      hanging.get(name)!.push({ rate, share: rate / m.rate });
      console.log(`round ${round + 1}, ${name} with an endpoint that never answers: ${Math.round(rate)} deliveries/s to the others (${((100 * rate) / m.rate).toFixed(0)} % of this round's rate without it)`);
    }
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const fmt = (x: number) => Math.round(x).toLocaleString('en-US');
const med = (name: string, f: (m: Measured) => number) => median(results.get(name)!.map(f));
const ceiling = contenders.includes('ceiling') ? med('ceiling', (m) => m.rate) : NaN;
const ceilingCpu = contenders.includes('ceiling') ? med('ceiling', (m) => m.own + m.store) : NaN;
console.log(
  `\n| contender | deliveries/s | share of the ceiling | CPU ms per 1,000: own + store | ratio to the ceiling's CPU | deliveries per CPU-second (own + store) | the whole machine, CPU ms per 1,000 | in receivers | peak memory | p50 / p99 at ${RATE} events/s | with one endpoint that never answers: deliveries/s to the others (share of its rate without) |`,
);
console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const name of contenders) {
  const rate = med(name, (m) => m.rate);
  const cpu = med(name, (m) => m.own + m.store);
  console.log(
    `| ${name} | ${fmt(rate)} | ${((100 * rate) / ceiling).toFixed(0)} % | ${fmt(med(name, (m) => m.own))} + ${fmt(med(name, (m) => m.store))} | ${(cpu / ceilingCpu).toFixed(2)} | ${fmt(1e6 / cpu)} | ${fmt(med(name, (m) => m.machine))} | ${med(name, (m) => m.machine / m.receiver).toFixed(2)} | ${fmt(med(name, (m) => m.rssMiB))} MiB | ${RATE > 0 ? `${fmt(median(latencies.get(name)!.map((l) => l.p50)))} / ${fmt(median(latencies.get(name)!.map((l) => l.p99)))} ms` : 'n/a'} | ${hangs(name) ? `${fmt(median(hanging.get(name)!.map((h) => h.rate)))} (${(100 * median(hanging.get(name)!.map((h) => h.share))).toFixed(0)} %)` : 'n/a'} |`,
  );
}
console.log(
  `\nMedians of ${rounds} interleaved rounds of ${DELIVERIES.toLocaleString('en-US')} deliveries each, from the receiver's first request to its last; node ${process.version}. Own: the contender's processes; store: the PostgreSQL backends serving its database, or its Redis server (the embedded engine's store is in its process). In receivers: the whole machine's CPU divided by the receiver's. Latency: ${RATE} events/s queued one at a time for ${WARMUP} s of warm-up and ${SECONDS} s measured (Herald's through its API), the receiver's clock minus each event's created_at. With one endpoint that never answers: the backlog again, one delivery in ${HANG_EVERY} for an endpoint of another origin that takes requests and never answers (every contender gives up on a request after 10 s), the others' deliveries counted for at most ${HANG_SECONDS} s from the first; the share is the median of each round's rate with it over that round's rate without.`,
);
