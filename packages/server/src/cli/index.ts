import { Command, CommanderError, Option } from 'commander';
import { readFileSync } from 'node:fs';
import { dataDirOf, DEFAULT_HOST, DEFAULT_PORT, LOOPBACK_NETWORKS, loadConfig, type Config, type Flags } from '../config.ts';
import { devCaPaths } from '../dev/dev-ca.ts';
import { ConfigError } from '../errors.ts';
import { startHerald } from '../main.ts';
import { openStorage } from '../storage/open.ts';
import type { OperatorOp } from '../services/operator.ts';
import { ApiProblemError, checkApiKey, createApiClient, parseBaseUrl } from './api-client.ts';
import { registerApiCommands } from './api-commands.ts';
import { startBanner } from './banner.ts';
import { describeFailure, EXIT, PREFIX } from './failure.ts';
import { registerListenCommand } from './listen.ts';
import { runOperatorOp } from './operator-client.ts';
import { printResult } from './output.ts';
import { heraldVersion } from './version.ts';

const program = new Command('herald')
  .description('Herald: signed, retried, observable webhook delivery.')
  .version(heraldVersion(), '-V, --version', 'print the version of Herald')
  .showHelpAfterError('(run with --help for usage)')
  // Set before any command is added: commands inherit both. Commander's own
  // errors (an unknown option, a missing argument) get Herald's prefix and
  // the usage exit code, like every other error the CLI prints.
  .configureOutput({ outputError: (text, write) => write(text.replace(/^error: /, PREFIX)) })
  .exitOverride((err: CommanderError) => {
    const done = err.exitCode === 0 || err.code === 'commander.helpDisplayed' || err.code === 'commander.version';
    process.exit(done ? err.exitCode : EXIT.usage);
  })
  .addOption(new Option('--data-dir <dir>', 'embedded database directory').env('HERALD_DATA_DIR'))
  .addOption(new Option('--database-url <url>', 'PostgreSQL URL; the embedded database is used when unset').env('DATABASE_URL'))
  // The API commands' settings. Not --url: `endpoints create --url` is the endpoint's
  // address, and commander would hand a program-wide --url to the program.
  .addOption(
    new Option('--herald-url <url>', "where Herald's API listens (endpoints, attempts, events)")
      .env('HERALD_URL')
      .default(`http://${DEFAULT_HOST}:${DEFAULT_PORT}`),
  )
  .addOption(new Option('--api-key <key>', 'an API key, hk_… (endpoints, attempts, events)').env('HERALD_API_KEY'))
  .option('--json', 'print machine-readable JSON');

function config(extra: Flags = {}) {
  const opts = program.opts<{ dataDir?: string; databaseUrl?: string }>();
  return loadConfig({ env: process.env, flags: { dataDir: opts.dataDir, databaseUrl: opts.databaseUrl, ...extra } });
}

async function op(name: OperatorOp, args: Record<string, unknown>): Promise<void> {
  printResult(name, await runOperatorOp(config(), name, args), program.opts<{ json?: boolean }>().json === true);
}

program
  .command('start')
  .description('run Herald: the API and the dispatcher (or one of them with --role)')
  .addOption(new Option('--role <role>', 'all, api (HTTP only) or worker (dispatcher only)').choices(['all', 'api', 'worker']).env('HERALD_ROLE'))
  .addOption(new Option('--host <host>', 'interface to listen on').env('HERALD_HOST'))
  .addOption(new Option('--port <port>', 'port to listen on').env('HERALD_PORT'))
  .addOption(new Option('--log-level <level>', 'fatal, error, warn, info, debug, trace or silent').env('HERALD_LOG_LEVEL'))
  .option('--dev', 'development mode, for your own machine only: also send to localhost, and trust the data directory\'s development CA there (HERALD_DEV=1)')
  .action(async (o: { role?: string; host?: string; port?: string; logLevel?: string; dev?: boolean }) => {
    const cfg = config({ role: o.role, host: o.host, port: o.port, logLevel: o.logLevel, dev: o.dev });
    if (cfg.dev) {
      console.error(
        `WARNING: development mode, for your own machine only. Herald also sends to ${LOOPBACK_NETWORKS.join(', ')} and localhost, ` +
          `and trusts the development CA in ${devCaPaths(cfg.dataDir).dir} for them. Never use --dev or HERALD_DEV on a server.`,
      );
    }
    const herald = await startHerald({ config: cfg });
    // Listening for signals before anything is printed: a supervisor (or a
    // test) that stops Herald as soon as it reads the banner must not find it
    // still without a handler, and so killed without a graceful stop.
    let stopping = false;
    const shutdown = (signal: string) => {
      // The second signal: someone does not want to wait for the first to finish.
      if (stopping) {
        console.error(`${signal} again: exiting now, without waiting for in-flight deliveries (their leases run out and they are sent again).`);
        process.exit(1);
      }
      stopping = true;
      console.error(`${signal}: finishing in-flight deliveries, then stopping… (${signal} again to exit at once)`);
      void herald.close().then(
        (inTime) => process.exit(inTime ? 0 : 1),
        () => process.exit(1),
      );
    };
    process.on('SIGTERM', () => shutdown('SIGTERM'));
    process.on('SIGINT', () => shutdown('SIGINT'));
    // Herald's own timers do not hold a process open (a worker waiting for
    // work, a LISTEN reconnect's back-off), so that an embedding program or a
    // test can end while Herald idles. `herald start` runs until a signal:
    // without this, a worker whose database connections were all dropped at
    // once had nothing left to keep it alive, and exited 0.
    setInterval(() => {}, 2 ** 30);
    // One write, so a reader of the pipe gets the banner whole.
    console.error(startBanner(cfg, herald));
  });

program
  .command('migrate')
  .description('apply database migrations, then exit')
  .action(async () => {
    const storage = await openStorage(config());
    console.log(storage.applied.length ? `applied migrations ${storage.applied.join(', ')}` : 'schema is up to date');
    await storage.close();
  });

const accounts = program.command('accounts').description('customer accounts');
accounts
  .command('create')
  .description('create an account')
  .requiredOption('--name <name>', 'display name of the customer')
  .action((o: { name: string }) => op('accounts.create', { name: o.name }));
accounts.command('list').description('list accounts').action(() => op('accounts.list', {}));

const keys = program.command('keys').description('API keys of an account');
keys
  .command('create')
  .description('create an API key; it is printed once')
  .requiredOption('--account <id>', 'account id')
  .option('--name <name>', 'a label to tell keys apart', 'default')
  .action((o: { account: string; name: string }) => op('keys.create', { account: o.account, name: o.name }));
keys
  .command('list')
  .description("list an account's keys (prefixes only)")
  .requiredOption('--account <id>', 'account id')
  .action((o: { account: string }) => op('keys.list', { account: o.account }));
keys
  .command('revoke')
  .description('revoke a key by id or prefix; requests with it get 401 at once')
  .argument('<key>', 'key id or prefix (hk_xxxxxxxx)')
  .action((key: string) => op('keys.revoke', { key }));

const users = program.command('users').description('people who sign in to the control panel');
users
  .command('create')
  .description('create a user of an account; without --password-stdin a password is generated and printed once')
  .requiredOption('--account <id>', 'account id')
  .requiredOption('--email <email>', 'what they sign in with')
  .requiredOption('--name <name>', 'their name, shown in the panel')
  .option('--password-stdin', 'read the password from standard input (at least 12 characters)')
  .action(async (o: { account: string; email: string; name: string; passwordStdin?: boolean }) =>
    op('users.create', { account: o.account, email: o.email, name: o.name, password: o.passwordStdin ? await readPasswordStdin() : undefined }),
  );
users
  .command('list')
  .description('list users, of one account or all')
  .option('--account <id>', 'account id')
  .action((o: { account?: string }) => op('users.list', { account: o.account }));
users
  .command('delete')
  .description('delete a user; their sessions end at once')
  .argument('<user>', 'user id or email')
  .action((user: string) => op('users.delete', { user }));
users
  .command('set-password')
  .description("replace a user's password (generated unless --password-stdin); their sessions end at once")
  .argument('<user>', 'user id or email')
  .option('--password-stdin', 'read the password from standard input')
  .action(async (user: string, o: { passwordStdin?: boolean }) =>
    op('users.set-password', { user, password: o.passwordStdin ? await readPasswordStdin() : undefined }),
  );

/** The whole of standard input, without its final newline (as `docker login --password-stdin`). */
async function readPasswordStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
}

const eventTypes = program.command('event-types').description('the catalog of event types');
eventTypes.command('list').description('list event types').action(() => op('event-types.list', {}));
eventTypes
  .command('add')
  .description('add an event type')
  .argument('<name>', 'lowercase dotted name, e.g. container.sealed')
  .option('--description <text>', 'what the event means', '')
  .option('--schema <file>', 'JSON Schema file for the data (default: any object)')
  .option('--example <file>', 'example data file, checked against the schema')
  .action((name: string, o: { description: string; schema?: string; example?: string }) =>
    op('event-types.add', { name, description: o.description, schema: readJson('--schema', o.schema), example: readJson('--example', o.example) }),
  );

/** The API client of one invocation, from --herald-url and --api-key. */
function apiClient() {
  const { heraldUrl, apiKey } = program.opts<{ heraldUrl: string; apiKey?: string }>();
  const baseUrl = parseBaseUrl(heraldUrl);
  return createApiClient({ baseUrl, apiKey: checkApiKey(apiKey, baseUrl) });
}
const jsonOutput = () => program.opts<{ json?: boolean }>().json === true;

registerApiCommands(program, { json: jsonOutput, api: apiClient });

registerListenCommand(program, { json: jsonOutput, api: apiClient, dataDir: () => dataDirOf({ env: process.env, flags: { dataDir: program.opts<{ dataDir?: string }>().dataDir } }) });

function readJson(flag: string, file: string | undefined): unknown {
  if (!file) return undefined;
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new ConfigError(flag, `cannot read JSON from ${file}: ${(err as Error).message}`);
  }
}

/** The settings a failure message may name; none when the settings themselves are what failed. */
function failureContext(): Partial<Config> {
  try {
    return config();
  } catch {
    return {};
  }
}

program.parseAsync(process.argv).catch((err: unknown) => {
  // --json: a script reads the problem as the API sent it, on standard output.
  if (err instanceof ApiProblemError && program.opts<{ json?: boolean }>().json && err.body !== undefined) console.log(JSON.stringify(err.body, null, 2));
  const failure = describeFailure(err, failureContext());
  console.error(failure.lines.join('\n'));
  process.exit(failure.exitCode);
});
