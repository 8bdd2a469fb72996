/**
 * `npm run bench`: Herald on each engine, as a real process, against a real
 * HTTPS receiver process on loopback. Prints ingest events/s, end-to-end
 * deliveries/s, ingest-to-receipt latency p50/p99 under a steady rate, peak
 * RSS, and the ceiling: the same receiver driven directly by undici at the
 * same concurrency, with no database.
 *
 *   npm run bench -- --events 20000 --endpoints 10 --rate 1000 --warmup 5 --seconds 10 --engines pglite,postgres
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { Agent, request } from 'undici';
import { buildRequestHeaders } from '../packages/server/src/core/request-headers.ts';
import { logisticsEvents } from './workload.ts';
import { CLK_TCK, cpuMs, machineTicks } from './proc-cpu.ts';
import { apiClient, CA, herald as startHerald, peakRssMiB, percentile, setupAccount, startReceiver as startReceiverOn, stopProcess, type Receiver, type ReceiverStats } from './harness.ts';

const { values: opts } = parseArgs({
  options: {
    events: { type: 'string', default: '20000' },
    endpoints: { type: 'string', default: '10' },
    /** The burst's endpoints spread over this many origins (receiver ports), in turn; Herald caps requests in flight per origin (64 by default). */
    origins: { type: 'string', default: '1' },
    rate: { type: 'string', default: '1000' },
    seconds: { type: 'string', default: '10' },
    /** Seconds at the steady rate before the measured SECONDS, left out of the figures (reported apart). */
    warmup: { type: 'string', default: '5' },
    engines: { type: 'string', default: process.env.DATABASE_URL || process.env.BENCH_DATABASE_URL ? 'pglite,postgres' : 'pglite,postgres' },
    split: { type: 'boolean', default: false },
    /** With --split: this many worker processes; the caps per endpoint and per origin hold across all of them. */
    workers: { type: 'string', default: '1' },
    'database-url': { type: 'string', default: process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres' },
    /** Write a V8 CPU profile of each Herald process into this folder (open it in Chrome DevTools). */
    profile: { type: 'string' },
    /** Write each steady-phase event's acceptance time and ingest-to-receipt latency (ms) as CSV, one file per engine (lat.csv: lat.postgres.csv), to see when the slow ones happened. */
    latencies: { type: 'string' },
    /** NODE_OPTIONS for the worker processes alone (with --split), e.g. "--max-semi-space-size=64". */
    'worker-node-options': { type: 'string' },
  },
});
if (opts['worker-node-options'] && !opts.split) console.warn('--worker-node-options applies to the worker processes of --split only; ignored without it');
const EVENTS = Number(opts.events);
const ENDPOINTS = Number(opts.endpoints);
const ORIGINS = Number(opts.origins);
const RATE = Number(opts.rate);
const SECONDS = Number(opts.seconds);
const WARMUP = Number(opts.warmup);
// Herald's default HERALD_ENDPOINT_CONCURRENCY and HERALD_ORIGIN_CONCURRENCY; the ceiling uses as many connections.
const ENDPOINT_CONCURRENCY = 64;

const startReceiver = () => startReceiverOn(ORIGINS);
const herald = (args: string[], env: Record<string, string>) => startHerald(args, env, opts.profile ? ['--cpu-prof', `--cpu-prof-dir=${opts.profile}`] : []);
const api = apiClient();
const call = api.call;

/** Every PostgreSQL server process on this machine (the bench runs against a local server). */
function postgresPids(): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/comm`, 'utf8').trim() === 'postgres') pids.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}
/**
 * CPU time of the whole PostgreSQL server so far, in ms: every live server
 * process, plus what the postmaster has collected from backends that already
 * exited (cutime and cstime). Counting the live ones alone lost the work of a
 * backend the pool closed during a phase, and subtracted its earlier work.
 */
function postgresCpuMs(): number {
  let ticks = 0;
  for (const pid of postgresPids()) {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      ticks += Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
    } catch {
      // gone meanwhile
    }
  }
  return (ticks * 1000) / CLK_TCK;
}

interface CpuSnapshot {
  herald: number[];
  postgres: number;
  /** Each PostgreSQL backend serving Herald's database: its CPU ms so far. */
  backends: Map<number, number>;
  receiver: number;
  generator: number;
  machine: { busy: number; all: number };
}
interface CpuUse {
  herald: number[];
  postgres: number | null;
  /**
   * The PostgreSQL backends connected to the bench's database, alone: unlike
   * the whole server, this leaves out other databases' work on a shared
   * machine (and the server's background processes: WAL writer, checkpointer).
   */
  backends: number | null;
  receiver: number;
  generator: number;
  machine: number;
}
function cpuSnapshot(heraldPids: number[], receiverPid: number, engine: string, backendPids: readonly number[]): CpuSnapshot {
  return {
    herald: heraldPids.map((pid) => cpuMs([pid])),
    postgres: engine === 'postgres' ? postgresCpuMs() : 0,
    backends: new Map(backendPids.map((pid) => [pid, cpuMs([pid])])),
    receiver: cpuMs([receiverPid]),
    generator: cpuMs([process.pid]),
    machine: machineTicks(),
  };
}
/** CPU ms used since `s0` per 1,000 of `units` (deliveries or events), and how busy the machine was. */
function cpuSince(
  s0: CpuSnapshot,
  heraldPids: number[],
  receiverPid: number,
  engine: string,
  units: number,
  backendPids: readonly number[],
): { use: CpuUse; busy: number } {
  const s1 = cpuSnapshot(heraldPids, receiverPid, engine, backendPids);
  const per = (ms: number) => (ms * 1000) / units;
  // A backend opened during the phase counts from 0; one closed during it is lost (pools keep theirs while busy).
  let backends = 0;
  for (const [pid, ms] of s1.backends) backends += ms - (s0.backends.get(pid) ?? 0);
  return {
    use: {
      herald: s1.herald.map((ms, i) => per(ms - s0.herald[i]!)),
      postgres: engine === 'postgres' ? per(s1.postgres - s0.postgres) : null,
      backends: engine === 'postgres' ? per(backends) : null,
      receiver: per(s1.receiver - s0.receiver),
      generator: per(s1.generator - s0.generator),
      // All CPUs' busy time, so it includes the kernel's work for loopback traffic.
      machine: per(((s1.machine.busy - s0.machine.busy) * 1000) / CLK_TCK),
    },
    busy: (s1.machine.busy - s0.machine.busy) / (s1.machine.all - s0.machine.all),
  };
}

async function waitFor(receiver: Receiver, n: number, timeoutMs: number): Promise<ReceiverStats> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const s = await receiver.stats();
    if (s.count >= n) return receiver.stats(true);
    if (Date.now() > deadline) throw new Error(`only ${s.count} of ${n} deliveries arrived in ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

interface Result {
  engine: string;
  processes: number;
  ingest: number;
  e2e: number;
  ceiling: number;
  p50: number;
  p99: number;
  steadyRate: number;
  /** p99 of the warm-up's events (NaN without a warm-up). */
  warmupP99: number;
  rss: number;
  /** CPU ms per 1,000 deliveries in the burst phase, ingest included: Herald, PostgreSQL, receiver. */
  cpu: CpuUse;
  /** CPU ms per 1,000 events in the steady phase (one delivery each), from the first publish to the last receipt. */
  steadyCpu: CpuUse;
  /** Share of the machine's CPU time busy during the burst (all processes). */
  machineBusy: number;
  /**
   * PostgreSQL's WAL in KiB per 1,000 deliveries, in the burst and in the
   * steady phase's measured window (null on PGlite). The whole server's WAL:
   * nothing else should write to that server during the run. Unlike CPU time,
   * it does not move with the machine's speed.
   */
  wal: { burst: number; steady: number } | null;
}

type Cleanup = () => Promise<void> | void;
/** The cleanups of the engine runs going on, so that an interrupted bench stops its processes and drops its database too. */
const running = new Set<Cleanup[]>();
for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) {
  process.once(signal, () => {
    void (async () => {
      for (const cleanups of running) for (const c of [...cleanups].reverse()) await Promise.resolve().then(c).catch(() => undefined);
      process.exit(code);
    })();
  });
}

async function benchEngine(engine: 'pglite' | 'postgres'): Promise<Omit<Result, 'ceiling'>> {
  const cleanups: Cleanup[] = [];
  running.add(cleanups);
  try {
    // The receiver listens on loopback, which Herald refuses unless allowed.
    const env: Record<string, string> = { HERALD_PORT: '0', HERALD_ENDPOINT_CONCURRENCY: String(ENDPOINT_CONCURRENCY), HERALD_ORIGIN_CONCURRENCY: String(ENDPOINT_CONCURRENCY), HERALD_ALLOWED_NETWORKS: '127.0.0.0/8' };
    let walNow: (() => Promise<string>) | undefined;
    let backendPids: () => Promise<number[]> = async () => [];
    let walKiB: ((from: string, to: string, per: number) => Promise<number>) | undefined;
    if (engine === 'pglite') {
      const dir = mkdtempSync(join(tmpdir(), 'herald-bench-'));
      cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
      env.HERALD_DATA_DIR = dir;
    } else {
      const name = `herald_bench_${process.pid}`;
      const admin = new pg.Client({ connectionString: opts['database-url'] });
      await admin.connect();
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.query(`CREATE DATABASE ${name}`);
      cleanups.push(async () => {
        await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        await admin.end();
      });
      backendPids = async () =>
        (await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [name])).rows.map((r) => r.pid);
      walNow = async () => (await admin.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')).rows[0]!.lsn;
      walKiB = async (from, to, per) =>
        (Number((await admin.query<{ n: string }>('SELECT pg_wal_lsn_diff($1::pg_lsn, $2::pg_lsn)::text AS n', [to, from])).rows[0]!.n) * 1000) / per / 1024;
      const u = new URL(opts['database-url']!);
      u.pathname = `/${name}`;
      env.DATABASE_URL = u.toString();
      env.HERALD_ENCRYPTION_KEY = randomBytes(32).toString('base64');
    }
    const bulkKey = await setupAccount(env);
    const steadyKey = await setupAccount(env);
    const receiver = await startReceiver();
    cleanups.push(() => void receiver.child.kill());
    // --split (PostgreSQL): the API and the dispatcher in two processes, as a
    // production deployment on PostgreSQL would run them.
    const split = opts.split && engine === 'postgres';
    const processes: ChildProcess[] = [];
    // Each process is stopped at the end from the moment it is up: a worker
    // that fails to start must not leave the API running (it holds the
    // bench's stdout, so the bench would never exit).
    const started = (child: ChildProcess) => {
      processes.push(child);
      // Herald's own shutdown grace is 15 s; one that outlives it by far is killed.
      cleanups.push(() => stopProcess(child));
    };
    const h = await herald(['start', ...(split ? ['--role', 'api'] : [])], env);
    console.log(`herald start (${engine}): API listening ${fmt(h.startMs)} ms after the process was spawned`);
    started(h.child);
    const workers = split ? Number(opts.workers) : 0;
    for (let i = 0; i < workers; i++) {
      // Every worker gets the same settings: the endpoint and origin caps hold
      // across all workers together, so N workers still have at most
      // ENDPOINT_CONCURRENCY requests in flight to the receiver, as the ceiling does.
      started(
        (
          await herald(['start', '--role', 'worker'], {
            ...env,
            ...(opts['worker-node-options'] ? { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} ${opts['worker-node-options']}`.trim() } : {}),
          })
        ).child,
      );
    }
    const all = ['alarm.created', 'alarm.resolved', 'shipment.created', 'shipment.completed'];
    for (let i = 0; i < ENDPOINTS; i++) {
      await call(h.url, bulkKey, '/v1/endpoints', { url: `https://localhost:${receiver.ports[i % ORIGINS]}/bulk/${i}`, event_types: all });
    }
    await call(h.url, steadyKey, '/v1/endpoints', { url: `https://localhost:${receiver.port}/steady`, event_types: all });

    // Phase 1: a burst of EVENTS events to ENDPOINTS endpoints, through the batch API.
    const gen = logisticsEvents();
    const batches = Array.from({ length: Math.ceil(EVENTS / 100) }, () => Array.from({ length: 100 }, () => gen.next().value));
    const heraldPids = processes.map((p) => p.pid!);
    const receiverPid = receiver.child.pid!;
    const wal0 = await walNow?.();
    const cpu0 = cpuSnapshot(heraldPids, receiverPid, engine, await backendPids());
    const t0 = Date.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (next < batches.length) await call(h.url, bulkKey, '/v1/events/batch', { events: batches[next++] });
      }),
    );
    const ingestSeconds = (Date.now() - t0) / 1000;
    const burst = await waitFor(receiver, EVENTS * ENDPOINTS, 30 * 60_000);
    const e2eSeconds = (burst.last - t0) / 1000;
    const { use: cpu, busy: machineBusy } = cpuSince(cpu0, heraldPids, receiverPid, engine, EVENTS * ENDPOINTS, await backendPids());
    const wal1 = await walNow?.();

    // Phase 2: a steady RATE events/s, one POST each, to one endpoint: WARMUP s
    // to warm up (the single-event path is new to the API's JIT, the tables'
    // statistics are young), then SECONDS s measured, without a pause between.
    receiver.reset();
    const steadyBackends = await backendPids();
    const warmupEvents = RATE * WARMUP;
    const total = RATE * SECONDS;
    const start = Date.now();
    const measureFrom = start + WARMUP * 1000;
    let steady0: CpuSnapshot | undefined;
    let steadyWal0: Promise<string> | undefined;
    const inflight: Promise<unknown>[] = [];
    // Send whatever is due, then yield for 2 ms: setTimeout cannot wait 1 ms
    // a thousand times a second, so pacing per event would cap the rate.
    for (let sent = 0; sent < warmupEvents + total; ) {
      const due = Math.min(warmupEvents + total, Math.floor(((Date.now() - start) * RATE) / 1000) + 1);
      for (; sent < due; sent++) {
        // The measured window's CPU starts with its first publish.
        if (sent === warmupEvents) {
          steady0 ??= cpuSnapshot(heraldPids, receiverPid, engine, steadyBackends);
          steadyWal0 ??= walNow?.();
        }
        inflight.push(call(h.url, steadyKey, '/v1/events', gen.next().value));
      }
      await new Promise((r) => setTimeout(r, 2));
    }
    await Promise.all(inflight);
    const sentSeconds = (Date.now() - measureFrom) / 1000;
    const got = await waitFor(receiver, warmupEvents + total, 5 * 60_000);
    // CPU from the first measured publish to the last receipt, per measured event.
    const steadyCpu = cpuSince(steady0!, heraldPids, receiverPid, engine, total, await backendPids()).use;
    const steadyWal1 = await walNow?.();
    const wal =
      walKiB && wal0 && wal1 && steadyWal0 && steadyWal1
        ? { burst: await walKiB(wal0, wal1, EVENTS * ENDPOINTS), steady: await walKiB(await steadyWal0, steadyWal1, total) }
        : null;
    // An event belongs to the window Herald accepted it in (created_at): the
    // few warm-up events still in the API when the window opened count as measured.
    const measured = got.latencies.filter((_, i) => got.created[i]! >= measureFrom);
    if (opts.latencies) {
      // One file per engine. Epoch milliseconds too, to line events up with
      // what else ran then; warm-up events have negative times in the window.
      const file = opts.latencies.replace(/(\.csv)?$/, `.${engine}.csv`);
      const rows = got.created.map((c, i) => `${c},${c - measureFrom},${got.latencies[i]}`);
      writeFileSync(file, `accepted_epoch_ms,ms_since_measured_window,latency_ms\n${rows.join('\n')}\n`);
    }
    const warm = got.latencies.filter((_, i) => got.created[i]! < measureFrom);
    const rss = processes.reduce((sum, p) => sum + peakRssMiB(p.pid!), 0);
    return {
      engine,
      processes: processes.length,
      ingest: EVENTS / ingestSeconds,
      e2e: (EVENTS * ENDPOINTS) / e2eSeconds,
      p50: percentile(measured, 50),
      p99: percentile(measured, 99),
      warmupP99: percentile(warm, 99),
      steadyRate: total / sentSeconds,
      rss,
      cpu,
      steadyCpu,
      machineBusy,
      wal,
    };
  } finally {
    running.delete(cleanups);
    for (const c of cleanups.reverse()) await c();
  }
}

/** One request of the ceiling's client: its answer is read to the end (a 204 has none), then the next one goes. */
class CeilingRequest {
  constructor(
    private readonly next: () => void,
    private readonly fail: (err: Error) => void,
  ) {}
  onConnect(): void {}
  onHeaders(): boolean {
    return true;
  }
  onData(): boolean {
    return true;
  }
  onComplete(): void {
    this.next();
  }
  onError(err: Error): void {
    this.fail(err);
  }
}

/** The ceiling: the receiver driven straight by undici, same concurrency, the same signed requests, no database. */
async function measureCeiling(n: number): Promise<{ rate: number; cpu: number; receiverCpu: number }> {
  const receiver = await startReceiver();
  const agent = new Agent({ connections: ENDPOINT_CONCURRENCY, connect: { ca: readFileSync(CA) } });
  const origin = `https://localhost:${receiver.port}`;
  const gen = logisticsEvents();
  const eventId = crypto.randomUUID();
  const body = Buffer.from(JSON.stringify({ id: eventId, type: 'alarm.created', created_at: new Date().toISOString(), data: gen.next().value.data }));
  const cpu0 = cpuMs([process.pid, receiver.child.pid!]);
  const receiverCpu0 = cpuMs([receiver.child.pid!]);
  const t0 = Date.now();
  let sent = 0;
  await new Promise<void>((resolve, reject) => {
    let running = ENDPOINT_CONCURRENCY;
    const next = (): void => {
      if (sent >= n) {
        running -= 1;
        if (running === 0) resolve();
        return;
      }
      sent += 1;
      // The very headers Herald sends (signed per attempt), so the receiver does the same work for both.
      const headers = buildRequestHeaders({
        eventType: 'alarm.created',
        eventId,
        attemptId: crypto.randomUUID(),
        timestamp: Math.floor(Date.now() / 1000),
        body,
        secret: 'whsec_bench',
      });
      // Called as the worker calls undici (send.ts, Flight): the agent's
      // dispatch() with a handler of its own and undici's timers off, not
      // request(), which makes a promise, a handler and a response stream per
      // request. Unlike the worker, no deadline of its own and nothing to log.
      agent.dispatch({ origin, path: '/ceiling', method: 'POST', headers, body, headersTimeout: 0, bodyTimeout: 0 }, new CeilingRequest(next, reject));
    };
    for (let i = 0; i < ENDPOINT_CONCURRENCY; i++) next();
  });
  const rate = n / ((Date.now() - t0) / 1000);
  const cpu = ((cpuMs([process.pid, receiver.child.pid!]) - cpu0) * 1000) / n;
  const receiverCpu = ((cpuMs([receiver.child.pid!]) - receiverCpu0) * 1000) / n;
  await agent.close();
  receiver.child.kill();
  return { rate, cpu, receiverCpu };
}

const fmt = (x: number) => (Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : 'n/a');
const ceilingRequests = Math.min(EVENTS * ENDPOINTS, 50_000);
async function ceilingNow(when: string): Promise<number> {
  const measured = await measureCeiling(ceilingRequests);
  console.log(
    `ceiling (${when}): undici straight to the receiver, ${ENDPOINT_CONCURRENCY} connections: ${fmt(measured.rate)} requests/s, ${fmt(measured.cpu)} CPU ms per 1,000 (client + receiver), ${(measured.cpu / measured.receiverCpu).toFixed(2)} receivers`,
  );
  return measured.rate;
}
// This machine's speed drifts by a quarter within minutes (a shared VM), so
// each engine is compared with the mean of a ceiling measured just before it
// and one just after, not with one measured minutes away.
const results: Result[] = [];
let ceilingBefore = await ceilingNow('before');
for (const engine of opts.engines!.split(',') as Array<'pglite' | 'postgres'>) {
  console.log(`running ${engine}: ${EVENTS} events × ${ENDPOINTS} endpoints on ${ORIGINS} origin${ORIGINS === 1 ? "" : "s"}, then ${RATE} events/s for ${WARMUP} s of warm-up and ${SECONDS} s measured …`);
  const result = await benchEngine(engine);
  const ceilingAfter = await ceilingNow(`after ${engine}`);
  results.push({ ...result, ceiling: (ceilingBefore + ceilingAfter) / 2 });
  ceilingBefore = ceilingAfter;
}
await api.close();
console.log(
  `\n| engine | ingest events/s | e2e deliveries/s | ceiling requests/s | e2e / ceiling | steady rate (events/s) | p50 ingest→receipt | p99 ingest→receipt | peak RSS | CPU ms per 1,000 deliveries: Herald (api + worker) / PostgreSQL / receiver / generator / whole machine | machine CPU per delivery, in receivers | machine CPU busy in the burst |`,
);
console.log(`|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|`);
for (const r of results) {
  console.log(
    `| ${r.engine}${r.processes > 2 ? ` (api + ${r.processes - 1} worker processes)` : r.processes > 1 ? ` (api + worker processes)` : ''} | ${fmt(r.ingest)} | ${fmt(r.e2e)} | ${fmt(r.ceiling)} | ${((100 * r.e2e) / r.ceiling).toFixed(0)} % | ${fmt(r.steadyRate)} | ${r.p50} ms | ${r.p99} ms | ${r.rss.toFixed(0)} MiB | ${r.cpu.herald.map(fmt).join(' + ')} / ${r.cpu.postgres === null ? 'in Herald' : fmt(r.cpu.postgres)} / ${fmt(r.cpu.receiver)} / ${fmt(r.cpu.generator)} / ${fmt(r.cpu.machine)} | ${(r.cpu.machine / r.cpu.receiver).toFixed(2)} | ${(100 * r.machineBusy).toFixed(0)} % |`,
  );
}
console.log(`\nSteady phase, CPU ms per 1,000 events (one delivery each): Herald (api + worker) / PostgreSQL / receiver / generator / whole machine`);
for (const r of results) {
  const c = r.steadyCpu;
  console.log(`- ${r.engine}: ${c.herald.map(fmt).join(' + ')} / ${c.postgres === null ? 'in Herald' : fmt(c.postgres)} / ${fmt(c.receiver)} / ${fmt(c.generator)} / ${fmt(c.machine)}`);
}
if (results.some((r) => r.cpu.backends !== null)) {
  // Herald's processes and the backends serving its database are measured by
  // process, so other work on a shared machine moves them little: the firmest
  // figure for comparing two versions of Herald on PostgreSQL.
  console.log(`\nHerald's processes and the PostgreSQL backends serving its database: CPU ms per 1,000 deliveries, burst / steady phase; and the two together per delivery, in receivers, burst / steady phase`);
  for (const r of results) {
    if (r.cpu.backends === null || r.steadyCpu.backends === null) continue;
    const sum = (c: CpuUse) => c.herald.reduce((a, b) => a + b, 0) + c.backends!;
    console.log(
      `- ${r.engine}: Herald ${fmt(r.cpu.herald.reduce((a, b) => a + b, 0))} / ${fmt(r.steadyCpu.herald.reduce((a, b) => a + b, 0))}, backends ${fmt(r.cpu.backends)} / ${fmt(r.steadyCpu.backends)}; together ${(sum(r.cpu) / r.cpu.receiver).toFixed(2)} / ${(sum(r.steadyCpu) / r.steadyCpu.receiver).toFixed(2)} receivers`,
    );
  }
}
if (results.some((r) => r.wal)) {
  console.log(`\nPostgreSQL's WAL, KiB per 1,000 deliveries (the whole server's; it does not move with the machine's speed): burst / steady phase`);
  for (const r of results) if (r.wal) console.log(`- ${r.engine}: ${fmt(r.wal.burst)} / ${fmt(r.wal.steady)}`);
}
if (WARMUP > 0) {
  console.log(`\nSteady phase's warm-up (${WARMUP} s at the same rate, left out of p50 / p99 above): p99 ingest→receipt`);
  for (const r of results) console.log(`- ${r.engine}: ${r.warmupP99} ms`);
}
console.log(`\nIn receivers: CPU time divided by the receiver's for the same requests (it does the same work in every run), a measure that holds still while the machine's speed drifts. ceiling: the mean of the ones measured just before and just after each engine (undici, ${ENDPOINT_CONCURRENCY} connections, same receiver); node ${process.version}; ${EVENTS} events × ${ENDPOINTS} endpoints on ${ORIGINS} origin${ORIGINS === 1 ? "" : "s"}; steady phase ${RATE} events/s × ${SECONDS} s to 1 endpoint, after ${WARMUP} s of warm-up at that rate`);
