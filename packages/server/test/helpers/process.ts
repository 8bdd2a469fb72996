import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { READY_LINE } from '../../src/cli/banner.ts';
import { builtCli } from './built.ts';

const CA = fileURLToPath(new URL('../fixtures/tls/ca.pem', import.meta.url));

export interface HeraldProcess {
  child: ChildProcess;
  /** The API URL it printed, when it serves the API. */
  url?: string;
  /** The metrics port's URL it printed (…/metrics), with HERALD_METRICS_PORT. */
  metricsUrl?: string;
  stderr(): string;
  /** Resolves with the exit code (or signal) when it ends. */
  exited: Promise<number | string>;
}

/**
 * Starts `herald start` as a real process and resolves once it says it is
 * running. It trusts the test CA through NODE_EXTRA_CA_CERTS.
 */
export async function startHeraldProcess(args: string[], env: Record<string, string>): Promise<HeraldProcess> {
  const child = spawn(process.execPath, [builtCli(), 'start', ...args], {
    // The test receivers listen on loopback, which Herald refuses unless allowed.
    env: { ...process.env, NODE_EXTRA_CA_CERTS: CA, HERALD_LOG_LEVEL: 'warn', HERALD_ALLOWED_NETWORKS: '127.0.0.0/8,::1/128', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  const exited = new Promise<number | string>((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  const ready = new Promise<void>((resolve, reject) => {
    child.stderr!.on('data', (chunk: Buffer) => {
      err += chunk.toString();
      if (err.includes(READY_LINE)) resolve();
    });
    void exited.then((code) => reject(new Error(`herald exited (${code}) before it was ready:\n${err}`)));
  });
  await ready;
  const url = /API: (\S+)/.exec(err)?.[1];
  const metricsUrl = /Metrics: (\S+)/.exec(err)?.[1];
  return { child, url, metricsUrl, stderr: () => err, exited };
}
