import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const BIN = process.env.HERALD_TEST_PG_BIN ?? '/usr/lib/postgresql/15/bin';

/** PostgreSQL's programs are there to start a cluster of the test's own. */
export const CLUSTER_AVAILABLE = existsSync(join(BIN, 'initdb')) && existsSync(join(BIN, 'pg_ctl'));

/**
 * A throwaway PostgreSQL server of one test file, in a temporary folder on a
 * free port, which the test can stop, start, freeze and thaw. PostgreSQL
 * refuses to run as root, so as root it runs as the `postgres` user.
 */
export interface Cluster {
  /** postgres://…/postgres on this server. */
  url: string;
  port: number;
  start(): Promise<void>;
  /** A fast shutdown: sessions are terminated, then connections refused. */
  stop(): Promise<void>;
  /** SIGSTOP to the postmaster and every backend: connections stay open, nothing answers. */
  freeze(): void;
  thaw(): void;
  /** Stops the server, whatever its state, and removes its folder. */
  remove(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

const asRoot = userInfo().uid === 0;

async function pgTool(tool: string, args: string[]): Promise<string> {
  const [cmd, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', join(BIN, tool), ...args]] : [join(BIN, tool), args];
  const { stdout } = await run(cmd, argv, { timeout: 60_000 });
  return stdout;
}

/** The server's processes: the postmaster and its children (backends, background workers). */
function processesOf(postmaster: number): number[] {
  const pids = [postmaster];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // The fields after the command's closing parenthesis: state, then the parent's pid.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === postmaster) pids.push(Number(entry));
    } catch {
      // It ended meanwhile.
    }
  }
  return pids;
}

export async function startCluster(): Promise<Cluster> {
  const dir = mkdtempSync(join(tmpdir(), 'herald-pg-'));
  const data = join(dir, 'data');
  if (asRoot) chownSync(dir, Number((await run('id', ['-u', 'postgres'])).stdout.trim()), Number((await run('id', ['-g', 'postgres'])).stdout.trim()));
  const port = await freePort();
  let running = false;
  let frozen: number[] = [];
  const cluster: Cluster = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    async start() {
      await pgTool('pg_ctl', ['-D', data, '-l', join(dir, 'log'), '-w', '-t', '30', '-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=50`, 'start']);
      running = true;
    },
    async stop() {
      await pgTool('pg_ctl', ['-D', data, '-m', 'fast', '-w', '-t', '30', 'stop']);
      running = false;
    },
    freeze() {
      const postmaster = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
      // The postmaster first: stopped, it starts no backend, so the list made
      // next holds every one. Listed first, a backend forked between the list
      // and the postmaster's stop ran on, and answered a test's query.
      process.kill(postmaster, 'SIGSTOP');
      frozen = processesOf(postmaster);
      for (const pid of frozen) process.kill(pid, 'SIGSTOP');
    },
    thaw() {
      for (const pid of frozen) {
        try {
          process.kill(pid, 'SIGCONT');
        } catch {
          // Gone already.
        }
      }
      frozen = [];
    },
    async remove() {
      cluster.thaw();
      if (running) await pgTool('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => {});
      running = false;
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    await pgTool('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync', '--no-instructions']);
    await cluster.start();
  } catch (err) {
    await cluster.remove();
    throw err;
  }
  return cluster;
}
