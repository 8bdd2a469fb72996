import { spawn, type ChildProcess } from 'node:child_process';
import { after } from 'node:test';
import { fileURLToPath } from 'node:url';
import { READY_LINE } from '../../src/cli/banner.ts';
import { builtCli } from './built.ts';

/** The server package folder: the CLI runs from here, as `npm start` does. */
export const SERVER_DIR = fileURLToPath(new URL('../../', import.meta.url));

const children = new Set<ChildProcess>();
// Whatever a test did, no Herald it started outlives the file.
after(() => {
  for (const child of children) child.kill('SIGKILL');
});

/** The environment without any Herald setting of the caller's, plus `extra`. */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!k.startsWith('HERALD_') && k !== 'DATABASE_URL' && k !== 'INIT_CWD') env[k] = v;
  }
  return { ...env, ...extra };
}

function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode);
    else child.once('exit', (code) => resolve(code));
  });
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs one CLI command to completion; `input` is written to its standard input. */
export async function runCli(args: string[], env: NodeJS.ProcessEnv = cleanEnv(), input?: string): Promise<CliResult> {
  const child = spawn(process.execPath, [builtCli(), ...args], { cwd: SERVER_DIR, env, stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
  if (input !== undefined) child.stdin!.end(input);
  children.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (c) => resolve(c));
  });
  children.delete(child);
  return { code, stdout, stderr };
}

export interface RunningHerald {
  url: string;
  child: ChildProcess;
  stderr(): string;
  /** SIGTERM, then the exit code once it has shut down. */
  stop(): Promise<number | null>;
}

/**
 * Starts `herald start --port 0` and resolves once it prints where its API
 * listens (after the database is open and the admin socket is up); rejects
 * with its output if it exits first.
 */
export function startHerald(args: string[], env: NodeJS.ProcessEnv = cleanEnv()): Promise<RunningHerald> {
  const child = spawn(process.execPath, [builtCli(), 'start', '--port', '0', '--log-level', 'warn', ...args], {
    cwd: SERVER_DIR,
    // The test receivers listen on loopback, which Herald refuses unless allowed.
    env: { HERALD_ALLOWED_NETWORKS: '127.0.0.0/8,::1/128', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let stderr = '';
  child.stdout!.resume();
  return new Promise((resolve, reject) => {
    const onExit = (code: number | null) => reject(new Error(`herald start exited with ${code} before listening:\n${stderr}`));
    child.once('exit', onExit);
    child.once('error', reject);
    child.stderr!.on('data', (c: Buffer) => {
      stderr += c.toString();
      // The banner's last line: everything above it, the API's address included, is in.
      if (!stderr.includes(READY_LINE)) return;
      const match = /API: (http:\/\/\S+)/.exec(stderr);
      if (!match) return reject(new Error(`herald start printed no API address:\n${stderr}`));
      child.off('exit', onExit);
      child.stderr!.removeAllListeners('data');
      child.stderr!.on('data', (more: Buffer) => (stderr += more.toString()));
      resolve({
        url: match[1]!,
        child,
        stderr: () => stderr,
        async stop() {
          child.kill('SIGTERM');
          const code = await exited(child);
          children.delete(child);
          return code;
        },
      });
    });
  });
}

export interface StreamingCli {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves with the first match of `pattern` in stdout or stderr (`in`), or rejects after `timeoutMs` or when the command exits first. */
  waitFor(pattern: RegExp, options?: { in?: 'stdout' | 'stderr'; timeoutMs?: number }): Promise<RegExpExecArray>;
  /** Sends `signal` (SIGINT: Ctrl-C), then resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts a long-running CLI command (such as `herald listen`) and lets the test wait on what it prints. */
export function spawnCli(args: string[], env: NodeJS.ProcessEnv = cleanEnv()): StreamingCli {
  const child = spawn(process.execPath, [builtCli(), ...args], { cwd: SERVER_DIR, env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  const out = { stdout: '', stderr: '' };
  const waiters = new Set<() => void>();
  const wake = () => waiters.forEach((w) => w());
  child.stdout!.on('data', (c: Buffer) => ((out.stdout += c.toString()), wake()));
  child.stderr!.on('data', (c: Buffer) => ((out.stderr += c.toString()), wake()));
  child.once('exit', wake);
  return {
    child,
    stdout: () => out.stdout,
    stderr: () => out.stderr,
    waitFor(pattern, { in: stream = 'stdout', timeoutMs = 30_000 } = {}) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const match = pattern.exec(out[stream]);
          if (match) done(() => resolve(match));
          else if (child.exitCode !== null || child.signalCode !== null) {
            done(() => reject(new Error(`exited (${child.exitCode ?? child.signalCode}) before printing ${pattern}:\n${out.stdout}\n${out.stderr}`)));
          }
        };
        const timer = setTimeout(() => done(() => reject(new Error(`no ${pattern} within ${timeoutMs} ms:\n${out.stdout}\n${out.stderr}`))), timeoutMs);
        const done = (settle: () => void) => {
          clearTimeout(timer);
          waiters.delete(check);
          settle();
        };
        waiters.add(check);
        check();
      });
    },
    async stop(signal = 'SIGINT') {
      child.kill(signal);
      const code = await exited(child);
      children.delete(child);
      return code;
    },
  };
}
