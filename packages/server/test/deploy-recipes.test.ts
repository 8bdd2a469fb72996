import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { before, describe, test } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { loadConfig, type Config, type Env } from '../src/config.ts';
import { cleanEnv, runCli } from './helpers/cli.ts';

/**
 * The deployment recipes (docker-compose.yml, deploy/systemd/) are read as
 * Docker Compose and systemd read them, and checked against Herald itself:
 * every setting they give is one config.ts reads, with a value it accepts;
 * every command line is one the CLI defines; the processes and their roles,
 * health checks and stop timeouts are what docs/operations.md says.
 */

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const COMPOSE_FILE = join(ROOT, 'docker-compose.yml');
const COMPOSE_ENV_EXAMPLE = join(ROOT, 'deploy/compose.env.example');
const SYSTEMD_DIR = join(ROOT, 'deploy/systemd');
const SYSTEMD_ENV_EXAMPLE = join(SYSTEMD_DIR, 'herald.env.example');

/** The variables a deployment file may set for Herald and must therefore be ones Herald reads. */
const isHeraldSetting = (name: string) => name.startsWith('HERALD_') || name === 'DATABASE_URL';

/**
 * Loads the settings as Herald does and records which variables it looked
 * at: the list of what Herald reads comes from config.ts itself.
 */
function loadRecording(env: Env): { config: Readonly<Config>; read: Set<string> } {
  const read = new Set<string>();
  const recording = new Proxy(env, {
    get(target, name) {
      if (typeof name === 'string') read.add(name);
      return target[name as string];
    },
  });
  return { config: loadConfig({ env: recording }), read };
}

/** Loads `env` as Herald does; fails naming `where` if a setting is not Herald's or its value is refused. */
function checkSettings(where: string, env: Env): Readonly<Config> {
  let loaded: ReturnType<typeof loadRecording>;
  try {
    loaded = loadRecording(env);
  } catch (err) {
    assert.fail(`${where}: Herald refuses these settings: ${(err as Error).message}`);
  }
  const unknown = Object.keys(env).filter((name) => isHeraldSetting(name) && !loaded.read.has(name));
  assert.deepEqual(unknown, [], `${where} sets variables Herald does not read`);
  return loaded.config;
}

/** `KEY=value` lines, as systemd's EnvironmentFile= and Compose's .env read them (comments and blank lines skipped). */
function parseEnvFile(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#')) continue;
    const match = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(trimmed);
    assert.ok(match, `not a KEY=value line: ${line}`);
    env[match[1]!] = match[2]!.replace(/^"(.*)"$/, '$1').replace(/^'(.*)'$/, '$1');
  }
  return env;
}

/**
 * What an operator puts where an example leaves a secret empty: the key as
 * `openssl rand -base64 32` makes it, a password as `openssl rand -hex 24`.
 */
function withSecrets(env: Record<string, string>): Record<string, string> {
  const filled = { ...env };
  if (filled.HERALD_ENCRYPTION_KEY === '') filled.HERALD_ENCRYPTION_KEY = randomBytes(32).toString('base64');
  if (filled.POSTGRES_PASSWORD === '') filled.POSTGRES_PASSWORD = randomBytes(24).toString('hex');
  return filled;
}

/** Compose's interpolation: $$, $VAR, ${VAR}, ${VAR:-default}, ${VAR-default}, ${VAR:?error}, ${VAR?error}. */
function interpolate(text: string, vars: Record<string, string>, used: Set<string>): string {
  return text.replace(/\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g, (whole, braced?: string, op?: string, arg?: string, bare?: string) => {
    if (whole === '$$') return '$';
    const name = (braced ?? bare)!;
    used.add(name);
    const value = vars[name];
    const present = op?.startsWith(':') ? value !== undefined && value !== '' : value !== undefined;
    if (present) return value!;
    if (op?.endsWith('?')) throw new Error(`\${${name}} is required: ${arg}`);
    return op?.endsWith('-') ? arg! : '';
  });
}

function interpolateAll(value: unknown, vars: Record<string, string>, used: Set<string>): unknown {
  if (typeof value === 'string') return interpolate(value, vars, used);
  if (Array.isArray(value)) return value.map((item) => interpolateAll(item, vars, used));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolateAll(v, vars, used)]));
  }
  return value;
}

/** A Compose duration ("45s", "1m30s") or a systemd time span ("45s", "1min 30s", "45"), in milliseconds. */
function durationMs(text: string, bareUnit: 's'): number {
  const units: Record<string, number> = { us: 0.001, ms: 1, s: 1000, sec: 1000, m: 60_000, min: 60_000, h: 3_600_000, hr: 3_600_000 };
  const parts = [...text.trim().matchAll(/(\d+(?:\.\d+)?)\s*([a-z]*)/g)];
  assert.ok(parts.length > 0, `not a duration: ${text}`);
  return parts.reduce((sum, [, amount, unit]) => {
    const factor = units[unit || bareUnit];
    assert.ok(factor, `unknown unit in duration ${text}`);
    return sum + Number(amount) * factor;
  }, 0);
}

/** A unit file: section → key → every value given (a key may repeat). */
function parseUnit(text: string): Map<string, Map<string, string[]>> {
  const sections = new Map<string, Map<string, string[]>>();
  let current: Map<string, string[]> | undefined;
  for (const line of text.replace(/\\\n/g, ' ').split('\n')) {
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#') || trimmed.startsWith(';')) continue;
    const section = /^\[(.+)\]$/.exec(trimmed);
    if (section) {
      current = new Map();
      sections.set(section[1]!, current);
      continue;
    }
    const entry = /^([A-Za-z0-9]+)=(.*)$/.exec(trimmed);
    assert.ok(entry && current, `not a unit-file line: ${line}`);
    current.set(entry[1]!, [...(current.get(entry[1]!) ?? []), entry[2]!.trim()]);
  }
  return sections;
}

/** The last value of a key, as systemd applies it. */
function last(section: Map<string, string[]> | undefined, key: string): string | undefined {
  return section?.get(key)?.at(-1);
}

/** The options `herald start --help` lists, with their allowed values where commander restricts them. */
interface StartCommand {
  options: Map<string, string[] | undefined>;
}

async function startCommand(): Promise<StartCommand> {
  const { code, stdout, stderr } = await runCli(['start', '--help'], cleanEnv());
  assert.equal(code, 0, `herald start --help failed: ${stderr}`);
  const options = new Map<string, string[] | undefined>();
  for (const [, flag, rest] of stdout.matchAll(/^\s+(?:-\w,\s+)?(--[a-z][a-z-]*)(.*)$/gm)) {
    const choices = /choices: ([^)]*?)(?:, env: |\))/.exec(rest!)?.[1];
    options.set(flag!, choices?.split(', ').map((c) => c.replace(/^"|"$/g, '')));
  }
  assert.ok(options.has('--role'), `herald start --help lists --role:\n${stdout}`);
  return { options };
}

/**
 * Checks `args` (what follows the `herald` program) against the CLI's own
 * definition and returns the role it starts.
 */
function checkStartArgs(where: string, args: string[], cli: StartCommand): string {
  assert.equal(args[0], 'start', `${where} runs herald start`);
  let role = 'all';
  for (let i = 1; i < args.length; i++) {
    const [flag, inline] = args[i]!.split('=', 2) as [string, string | undefined];
    assert.ok(cli.options.has(flag), `${where}: herald start has no option ${flag}`);
    const choices = cli.options.get(flag);
    const takesValue = flag !== '--dev' && flag !== '--help';
    const value = takesValue ? (inline ?? args[++i]) : undefined;
    if (takesValue) assert.ok(value !== undefined, `${where}: ${flag} needs a value`);
    if (choices) assert.ok(choices.includes(value!), `${where}: ${flag} ${value} is not one of ${choices.join(', ')}`);
    if (flag === '--role') role = value!;
  }
  return role;
}

/** The role a `herald start` command line asks for (checked against the CLI by checkStartArgs). */
function roleOf(args: string[]): string {
  const i = args.indexOf('--role');
  return i === -1 ? (args.find((a) => a.startsWith('--role='))?.slice('--role='.length) ?? 'all') : args[i + 1]!;
}

let cli: StartCommand;
before(async () => {
  cli = await startCommand();
});

describe('docker-compose.yml', () => {
  const exampleVars = parseEnvFile(readFileSync(COMPOSE_ENV_EXAMPLE, 'utf8'));
  const vars = withSecrets(exampleVars);
  const used = new Set<string>();
  const compose = interpolateAll(parseYaml(readFileSync(COMPOSE_FILE, 'utf8'), { merge: true }), vars, used) as {
    services: Record<string, ComposeService>;
    volumes?: Record<string, unknown>;
  };
  interface ComposeService {
    image?: string;
    build?: string | { context?: string };
    command?: string | string[];
    environment?: Record<string, string | number | null> | string[];
    depends_on?: Record<string, { condition?: string }> | string[];
    restart?: string;
    ports?: Array<string | { target: number; published?: string | number }>;
    healthcheck?: { test?: string | string[]; disable?: boolean };
    stop_grace_period?: string;
    deploy?: { replicas?: number };
    volumes?: Array<string | { source?: string; target: string }>;
  }
  const services = Object.entries(compose.services);
  const heralds = services.filter(([, s]) => s.build !== undefined);

  function environment(service: ComposeService): Record<string, string> {
    const env = service.environment ?? {};
    if (Array.isArray(env)) return Object.fromEntries(env.map((item) => item.split(/=(.*)/s, 2) as [string, string]));
    return Object.fromEntries(Object.entries(env).map(([k, v]) => [k, v === null ? '' : String(v)]));
  }
  function argv(command: string | string[] | undefined): string[] {
    if (command === undefined) return [];
    return Array.isArray(command) ? command : command.split(/\s+/).filter(Boolean);
  }
  const healthTest = (service: ComposeService) => argv(service.healthcheck?.test).join(' ');

  test('every variable it interpolates is in deploy/compose.env.example, so the example is complete', () => {
    assert.deepEqual([...used].filter((name) => !(name in exampleVars)), []);
  });

  const dockerfile = join(ROOT, 'Dockerfile');
  test("the image's entrypoint is the herald command, so each service's command is herald's arguments", { skip: existsSync(dockerfile) ? false : 'no Dockerfile in this checkout' }, () => {
    const entrypoints = [...readFileSync(dockerfile, 'utf8').matchAll(/^ENTRYPOINT\s+(\[.*\])\s*$/gm)];
    assert.ok(entrypoints.length > 0, 'the Dockerfile has an ENTRYPOINT in exec form');
    const entrypoint = JSON.parse(entrypoints.at(-1)![1]!) as string[];
    assert.match(entrypoint.at(-1)!, /(^|\/)herald(\.js)?$/, `ENTRYPOINT ${JSON.stringify(entrypoint)}`);
  });

  test('PostgreSQL: the official image, its data on a volume, a health check', () => {
    const postgres = services.filter(([, s]) => /^(docker\.io\/(library\/)?)?postgres:\d+/.test(s.image ?? ''));
    assert.equal(postgres.length, 1, 'one PostgreSQL service from the official image');
    const [, pg] = postgres[0]!;
    const mounts = (pg.volumes ?? []).map((v) => (typeof v === 'string' ? { source: v.split(':')[0], target: v.split(':')[1] } : v));
    const data = mounts.find((m) => m.target === '/var/lib/postgresql/data');
    assert.ok(data?.source && compose.volumes && data.source in compose.volumes, 'the data directory is a named volume');
    assert.match(healthTest(pg), /pg_isready/);
  });

  test('one API process and two workers, each a `herald start` the CLI accepts', () => {
    const count: Record<string, number> = {};
    for (const [name, service] of heralds) {
      const role = checkStartArgs(`service ${name}`, argv(service.command), cli);
      count[role] = (count[role] ?? 0) + (service.deploy?.replicas ?? 1);
    }
    assert.deepEqual(count, { api: 1, worker: 2 });
  });

  for (const [name, service] of heralds) {
    describe(`service ${name}`, () => {
      const env = environment(service);
      const config = () => checkSettings(`service ${name}`, env);

      test('is built from the repository root', () => {
        assert.equal(typeof service.build === 'string' ? service.build : service.build?.context, '.');
      });

      test('sets only settings Herald reads, with values it accepts', () => {
        config();
      });

      test('uses the PostgreSQL service, with its user, password and database', () => {
        const url = new URL(config().databaseUrl ?? assert.fail('DATABASE_URL is set'));
        const pg = compose.services[url.hostname];
        assert.ok(pg && pg.image?.includes('postgres'), `DATABASE_URL's host ${url.hostname} is the PostgreSQL service`);
        const pgEnv = environment(pg);
        assert.equal(decodeURIComponent(url.username), pgEnv.POSTGRES_USER);
        assert.equal(decodeURIComponent(url.password), pgEnv.POSTGRES_PASSWORD);
        assert.equal(url.pathname, `/${pgEnv.POSTGRES_DB}`);
      });

      test('starts once PostgreSQL is healthy, and is restarted', () => {
        const dependsOn = service.depends_on;
        assert.ok(dependsOn && !Array.isArray(dependsOn), 'depends_on names conditions');
        const pgName = services.find(([, s]) => s.image?.includes('postgres'))![0];
        assert.equal(dependsOn[pgName]?.condition, 'service_healthy');
        assert.ok(['always', 'unless-stopped', 'on-failure'].includes(service.restart ?? ''), `restart policy: ${service.restart}`);
      });

      test('is given longer to stop than Herald takes (HERALD_SHUTDOWN_TIMEOUT_MS)', () => {
        // Docker's default is 10 s, a third of Herald's.
        assert.ok(service.stop_grace_period, 'stop_grace_period is set');
        assert.ok(durationMs(service.stop_grace_period, 's') > config().shutdownTimeoutMs, `${service.stop_grace_period} > ${config().shutdownTimeoutMs} ms`);
      });

      const role = roleOf(argv(service.command));
      if (role === 'api' || role === 'all') {
        test('listens on all interfaces of its container, publishes its port, and is healthy when /readyz is', () => {
          const { host, port } = config();
          assert.equal(host, '0.0.0.0', 'reachable from outside its container');
          const published = (service.ports ?? []).map((p) => (typeof p === 'string' ? Number(p.split(':').at(-1)!.split('/')[0]) : p.target));
          assert.ok(published.includes(port), `port ${port} is published (${published.join(', ')})`);
          assert.match(healthTest(service), new RegExp(`:${port}/readyz\\b`));
        });
      } else {
        test('has no HTTP health check: a worker serves no HTTP', () => {
          assert.equal(service.healthcheck?.disable, true);
        });
      }
    });
  }
});

describe('systemd units', () => {
  const example = withSecrets(parseEnvFile(readFileSync(SYSTEMD_ENV_EXAMPLE, 'utf8')));
  const units = readdirSync(SYSTEMD_DIR).filter((f) => f.endsWith('.service'));

  test('the example environment file sets only settings Herald reads, with values it accepts', () => {
    const config = checkSettings('herald.env.example', example);
    assert.ok(config.databaseUrl, 'it is for PostgreSQL');
  });

  test('an API unit and a worker template', () => {
    assert.deepEqual(units.sort(), ['herald-worker@.service', 'herald.service']);
  });

  for (const file of units) {
    describe(file, () => {
      const unit = parseUnit(readFileSync(join(SYSTEMD_DIR, file), 'utf8'));
      const service = unit.get('Service');
      const env = () => ({
        ...example,
        ...Object.fromEntries((service?.get('Environment') ?? []).flatMap((e) => e.split(/\s+/)).map((e) => e.replace(/^"|"$/g, '').split(/=(.*)/s, 2) as [string, string])),
      });
      const config = () => checkSettings(file, env());

      test('reads /etc/herald/herald.env and runs as its own user', () => {
        assert.equal(last(service, 'EnvironmentFile'), '/etc/herald/herald.env');
        const user = last(service, 'User');
        assert.ok(user && user !== 'root', 'a dedicated user');
        config();
      });

      test('starts a `herald start` the CLI accepts, with the role its name says', () => {
        const [program, ...args] = (last(service, 'ExecStart') ?? assert.fail('ExecStart')).split(/\s+/);
        const workdir = last(service, 'WorkingDirectory') ?? assert.fail('WorkingDirectory');
        assert.ok(program!.startsWith(`${workdir}/`), `${program} is in the installation, ${workdir}`);
        const inRepo = join(ROOT, relative(workdir, program!));
        assert.ok(existsSync(inRepo), `${relative(ROOT, inRepo)} exists in an installed checkout`);
        const role = checkStartArgs(file, args, cli);
        assert.equal(role, file.startsWith('herald-worker@') ? 'worker' : 'api');
      });

      test('is restarted after a failure', () => {
        assert.equal(last(service, 'Restart'), 'on-failure');
        assert.ok(last(service, 'RestartSec'), 'RestartSec is set');
      });

      test('stops with SIGTERM to Herald alone, and waits longer than HERALD_SHUTDOWN_TIMEOUT_MS', () => {
        assert.equal(last(service, 'KillSignal'), 'SIGTERM');
        // A second SIGTERM makes Herald exit at once: only the main process gets the first.
        assert.equal(last(service, 'KillMode'), 'mixed');
        const stop = last(service, 'TimeoutStopSec') ?? assert.fail('TimeoutStopSec is set');
        assert.ok(durationMs(stop, 's') > config().shutdownTimeoutMs, `TimeoutStopSec=${stop} > ${config().shutdownTimeoutMs} ms`);
      });

      test('is hardened, with the data directory writable, and nothing that breaks Node', () => {
        assert.equal(last(service, 'NoNewPrivileges'), 'yes');
        assert.equal(last(service, 'ProtectSystem'), 'strict');
        assert.equal(last(service, 'PrivateTmp'), 'yes');
        const writable = [
          ...(service?.get('ReadWritePaths') ?? []).flatMap((v) => v.split(/\s+/)),
          ...(service?.get('StateDirectory') ?? []).flatMap((v) => v.split(/\s+/)).map((d) => `/var/lib/${d}`),
        ].map((p) => p.replace(/^-/, ''));
        assert.ok(writable.includes(config().dataDir), `${config().dataDir} (HERALD_DATA_DIR) is writable: ${writable.join(', ')}`);
        // V8 writes the machine code it compiles: MemoryDenyWriteExecute kills Node.
        assert.notEqual(last(service, 'MemoryDenyWriteExecute'), 'yes');
        // A system call filter kills the process at a call outside it unless told
        // otherwise, and V8 makes calls @system-service lacks (pkey_alloc on systemd 252).
        if (service?.has('SystemCallFilter')) assert.equal(last(service, 'SystemCallErrorNumber'), 'EPERM');
      });

      const analyze = spawnSync('systemd-analyze', ['--version']).status === 0;
      test('systemd reads it without a warning', { skip: analyze ? false : 'systemd-analyze is not installed' }, () => {
        const dir = mkdtempSync(join(tmpdir(), 'herald-units-'));
        try {
          // verify also checks that the program exists: point it at this checkout.
          const workdir = last(service, 'WorkingDirectory')!;
          const text = readFileSync(join(SYSTEMD_DIR, file), 'utf8').replaceAll(`${workdir}/`, `${ROOT}`);
          const path = join(dir, file.replace('@.', '@1.'));
          writeFileSync(path, text);
          const result = spawnSync('systemd-analyze', ['verify', path], { encoding: 'utf8' });
          assert.equal(result.stderr.trim(), '', result.stderr);
          assert.equal(result.status, 0);
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      });
    });
  }
});
