/**
 * What `npm run bench` and the race share: the receiver process, Herald as a
 * real process, its CLI and API, and peak memory. Nothing here runs on import.
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import { READY_LINE } from '../packages/server/src/cli/banner.ts';

const root = new URL('..', import.meta.url);
// The built CLI, run with plain node as in production (`npm run bench` builds first).
export const CLI = fileURLToPath(new URL('packages/server/dist/cli/index.js', root));
/** The test CA that signs the receiver's certificate. */
export const CA = fileURLToPath(new URL('packages/server/test/fixtures/tls/ca.pem', root));
// The bench's own helpers (the receiver) are TypeScript.
export const nodeArgs = ['--conditions=source', '--import', 'tsx'];

export interface ReceiverStats {
  count: number;
  first: number;
  last: number;
  /** Requests the hanging port took and never answered (`startReceiver`'s `hang`). */
  hung: number;
  latencies: number[];
  /** Each latency's event's created_at (ms). */
  created: number[];
}
export interface Receiver {
  child: ChildProcess;
  port: number;
  ports: number[];
  /** With `hang`: the port of an origin that takes requests and never answers them. */
  hangPort?: number;
  stats(full?: boolean): Promise<ReceiverStats>;
  reset(): void;
}

/** The HTTPS receiver (receiver.ts) in a process of its own, listening on `origins` ports, and with `hang` on one more that never answers. */
export function startReceiver(origins: number, hang = false): Promise<Receiver> {
  const child = fork(fileURLToPath(new URL('receiver.ts', import.meta.url)), {
    execArgv: nodeArgs,
    env: { ...process.env, HERALD_BENCH_PORTS: String(origins), HERALD_BENCH_HANG: hang ? '1' : '0' },
  });
  return new Promise((resolve) => {
    child.once('message', (m: { port: number; ports: number[]; hangPort?: number }) =>
      resolve({
        child,
        port: m.port,
        ports: m.ports,
        hangPort: m.hangPort,
        // Polls ask for the count alone: the latencies are sent once, at the end.
        stats: (full = false) =>
          new Promise((r) => {
            child.once('message', (s) => r(s as ReceiverStats));
            child.send({ cmd: full ? 'stats' : 'count' });
          }),
        reset: () => child.send({ cmd: 'reset' }),
      }),
    );
  });
}

const START_TIMEOUT_MS = 60_000;
export const STOP_TIMEOUT_MS = 30_000;

/** Starts Herald; `startMs` is the time from spawning it to its API listening. `nodeFlags` go before the CLI. */
export function herald(args: string[], env: Record<string, string>, nodeFlags: string[] = []): Promise<{ child: ChildProcess; url: string; startMs: number }> {
  const spawnedAt = performance.now();
  const child = spawn(process.execPath, [...nodeFlags, CLI, ...args], {
    env: { ...process.env, NODE_EXTRA_CA_CERTS: CA, HERALD_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'inherit', 'pipe'],
  });
  let err = '';
  let listeningAt = 0;
  return new Promise((resolve, reject) => {
    // A process that neither comes up nor exits (stuck on a lock, say) fails the bench instead of hanging it.
    const stuck = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`herald ${args.join(' ')} did not start within ${START_TIMEOUT_MS / 1000} s:\n${err}`));
    }, START_TIMEOUT_MS);
    child.stderr!.on('data', (c: Buffer) => {
      err += c.toString();
      if (!listeningAt && (err.includes('API: ') || err.includes(READY_LINE))) listeningAt = performance.now();
      if (err.includes(READY_LINE)) {
        clearTimeout(stuck);
        resolve({ child, url: /API: (\S+)/.exec(err)?.[1] ?? '', startMs: listeningAt - spawnedAt });
      }
    });
    child.on('exit', (code) => {
      clearTimeout(stuck);
      reject(new Error(`herald ${args.join(' ')} exited ${code}:\n${err}`));
    });
  });
}

/** Stops a process with SIGTERM, and kills it if it outlives Herald's own shutdown grace by far. */
export function stopProcess(child: ChildProcess): Promise<void> {
  return new Promise<void>((r) => {
    if (child.exitCode !== null || child.signalCode !== null) return r();
    const kill = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
    child.once('exit', () => {
      clearTimeout(kill);
      r();
    });
    child.kill('SIGTERM');
  });
}

/** One CLI command's JSON output. */
export function cli(args: string[], env: Record<string, string>): Promise<string> {
  const child = spawn(process.execPath, [CLI, ...args, '--json'], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  return new Promise((resolve, reject) => child.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`${args.join(' ')} exited ${code}`)))));
}

/** Herald's API, called with an API key; throws on an error answer. `close()` when done. */
export function apiClient() {
  const agent = new Agent({ connections: 32 });
  return {
    async call(url: string, key: string, path: string, body: unknown): Promise<any> {
      const res = await request(`${url}${path}`, {
        method: 'POST',
        dispatcher: agent,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      const json = await res.body.json();
      if (res.statusCode >= 300) throw new Error(`${path}: ${res.statusCode} ${JSON.stringify(json)}`);
      return json;
    },
    close: () => agent.close(),
  };
}

/** An account and an API key for it, through the CLI; returns the key. */
export async function setupAccount(env: Record<string, string>): Promise<string> {
  const account = JSON.parse(await cli(['accounts', 'create', '--name', 'Bench Logistics'], env)) as { id: string };
  return (JSON.parse(await cli(['keys', 'create', '--account', account.id], env)) as { key: string }).key;
}

/** A process's peak resident memory (VmHWM), in MiB. */
export const peakRssMiB = (pid: number) => Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;

/** The `p`th percentile of `xs` (nearest rank); NaN for none. */
export const percentile = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
};
