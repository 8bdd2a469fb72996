import { panelDistDir } from '@herald/panel';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import pinoPretty from 'pino-pretty';
import { readFileSync } from 'node:fs';
import type { Writable } from 'node:stream';
import type { Config } from './config.ts';
import { AddressPolicy } from './core/address-policy.ts';
import { databaseTime, systemClock, type Clock } from './core/clock.ts';
import { SetupToken } from './core/setup-token.ts';
import { loadOrCreateDevCa } from './dev/dev-ca.ts';
import { devTlsOptions } from './dev/dev-trust.ts';
import { createDispatcher, type Dispatcher } from './dispatcher/dispatcher.ts';
import { databaseParts } from './dispatcher/parts.ts';
import { createAgent } from './outbound/agent.ts';
import { sendAttempt } from './outbound/send.ts';
import { listenAdminSocket } from './http/admin-socket.ts';
import { buildApp, LOG_REDACT, LOG_SERIALIZERS } from './http/app.ts';
import { listenMetrics } from './http/metrics.ts';
import { createMetrics } from './metrics/metrics.ts';
import { createServiceDeps, type ServiceDeps } from './services/deps.ts';
import { setupNeeded } from './services/users.ts';
import { createMaintainer } from './maintenance/maintainer.ts';
import { runReplays } from './services/replays.ts';
import { openStorage } from './storage/open.ts';
import { reapAllLeases } from './storage/queries/claim-deliveries.ts';

export interface Herald {
  /** Where the API listens (absent for `--role worker`). */
  url: string | undefined;
  /** The metrics port's address, when HERALD_METRICS_PORT is set. */
  metricsUrl: string | undefined;
  /**
   * First run: the panel's setup page with this process's one-time token in
   * the fragment, when the API started while Herald had no user. Printed
   * once on the console, never logged.
   */
  setupLink: string | undefined;
  app: FastifyInstance | undefined;
  dispatcher: Dispatcher | undefined;
  deps: ServiceDeps;
  /**
   * Stops taking work, lets in-flight attempts finish within the grace period,
   * closes the database. Resolves within HERALD_SHUTDOWN_TIMEOUT_MS whatever
   * the database does: true when everything closed in time, false when it
   * gave up waiting (results not yet written are then lost; their leases run
   * out and the deliveries are sent again).
   */
  close(): Promise<boolean>;
}

export interface StartOptions {
  config: Readonly<Config>;
  clock?: Clock;
  logStream?: Writable;
}

/** NODE_EXTRA_CA_CERTS's bundle; Node has already warned at start if it cannot be read. */
function extraCas(file: string | undefined): string[] {
  if (!file) return [];
  try {
    return [readFileSync(file, 'utf8')];
  } catch {
    return [];
  }
}

/**
 * The process's logger: JSON lines (for a log collector), or with
 * HERALD_LOG_FORMAT=pretty one readable line each, coloured on a terminal.
 * Written synchronously, so that the last lines before an exit are not lost.
 */
function createLogger(config: Readonly<Config>, logStream: Writable | undefined) {
  const destination = logStream ?? process.stdout;
  const stream = config.logFormat === 'pretty' ? pinoPretty({ destination, sync: true, colorize: !logStream && process.stdout.isTTY === true }) : destination;
  return pino({ level: config.logLevel, redact: LOG_REDACT, serializers: LOG_SERIALIZERS }, stream);
}

/** The composition root: config → storage → API and/or dispatcher. */
export async function startHerald({ config, clock = systemClock, logStream }: StartOptions): Promise<Herald> {
  // The process's own logger, the API's parent: a database connection can
  // fail before or outside any request.
  const processLog = createLogger(config, logStream);
  const storage = await openStorage(config, {
    poolSize: config.dispatcher.concurrency > 64 ? 20 : 10,
    onError: (err, what) => processLog.warn({ err }, what),
  });
  const closers: Array<() => Promise<unknown>> = [];
  try {
    if (storage.db.engine === 'pglite') await reapAllLeases(storage.db, databaseTime(clock));
    const metrics = createMetrics({ endpointLabels: config.metrics.endpointLabels, db: storage.db, now: () => databaseTime(clock) });
    const deps = createServiceDeps({
      metrics,
      db: storage.db,
      encryptionKey: storage.encryptionKey,
      clock,
      addresses: new AddressPolicy(config.allowedNetworks),
      limits: config.limits,
      // In deps, so `herald users create` through the admin socket spends it too.
      setupToken: config.role !== 'worker' ? new SetupToken() : undefined,
    });
    // Development mode: receivers on this machine may use a certificate from the data directory's CA.
    const connect = config.dev ? devTlsOptions((await loadOrCreateDevCa(config.dataDir)).certPem, extraCas(config.extraCaFile)) : undefined;

    // Set as soon as close() is called: the health routes answer 503 from then on.
    let stopping = false;
    let app: FastifyInstance | undefined;
    let url: string | undefined;
    let setupLink: string | undefined;
    if (config.role !== 'worker') {
      // Test events go out from the API process, through a small pool of its own.
      const agent = createAgent({ connections: 4, addresses: deps.addresses, timeoutMs: config.dispatcher.requestTimeoutMs, connect });
      app = await buildApp({
        ...deps,
        disableAfter: config.dispatcher.disableAfter,
        retention: config.retention,
        outbound: { send: (request) => sendAttempt(agent, { ...request, timeoutMs: config.dispatcher.requestTimeoutMs }) },
        rateLimits: config.rateLimits,
        panelAuth: config.panel,
        trustedProxies: config.trustedProxies,
        maxBodyBytes: config.maxBodyBytes,
        bodyTimeoutMs: config.bodyTimeoutMs,
        logLevel: config.logLevel,
        logger: processLog,
        metricsToken: config.metrics.token,
        panel: { root: panelDistDir },
        stopping: () => stopping,
      });
      url = await app.listen({ host: config.host, port: config.port });
      if (await setupNeeded(storage.db)) setupLink = `${url}/setup#token=${deps.setupToken!.value}`;
      else deps.setupToken!.spend();
      closers.push(() => app!.close(), () => agent.close());
    }
    if (!config.databaseUrl) {
      const admin = await listenAdminSocket(deps, config.dataDir);
      closers.push(() => admin.close());
    }
    // A worker-only process has no API logger: the process's own.
    const log = app?.log ?? processLog;
    // Every role, a worker's too: it has no API port to scrape.
    let metricsUrl: string | undefined;
    if (config.metrics.port !== undefined) {
      const server = await listenMetrics({ metrics, token: config.metrics.token, host: config.host, port: config.metrics.port, log: processLog });
      metricsUrl = server.url;
      closers.push(() => server.close());
    }
    let dispatcher: Dispatcher | undefined;
    let stopDispatcher = async () => {};
    if (config.role !== 'api') {
      // As many connections per origin as the origin cap lets requests be in
      // flight: a request never waits in the client for one.
      const agent = createAgent({ connections: config.dispatcher.originConcurrency, addresses: deps.addresses, timeoutMs: config.dispatcher.requestTimeoutMs, connect });
      dispatcher = createDispatcher({
        ...databaseParts(storage.db, config.dispatcher, { metrics, log }),
        config: config.dispatcher,
        clock,
        log,
        encryptionKey: storage.encryptionKey,
        send: (req) => sendAttempt(agent, req),
      });
      await dispatcher.start();
      // Half the shutdown bound at most, so that the results of what it aborts can still be written.
      stopDispatcher = async () => {
        await dispatcher!.stop(Math.min(15_000, config.shutdownTimeoutMs / 2));
        await agent.destroy();
      };
    }
    // In every process; one at a time does the work (retention, pruning,
    // vacuuming), and each checks the schema for a newer Herald's migration.
    const maintainer = createMaintainer({
      db: storage.db,
      clock,
      config: { retention: config.retention, sessionIdleMs: config.panel.sessionIdleMs },
      log,
      onSchemaTooNew: (err) => {
        // The dispatcher stops claiming for good; what it has in flight still finishes.
        dispatcher?.pause(err.message);
      },
      replays: (maxBatches) => runReplays(deps, { maxBatches }),
    });
    maintainer.start();
    // Stopped first, together and each within its own bound: in-flight
    // attempts finish before the API and database close, and another process
    // can take the maintainer's lead at once.
    closers.unshift(() => Promise.all([maintainer.stop(), stopDispatcher()]));
    let closing: Promise<boolean> | undefined;
    return {
      url,
      metricsUrl,
      setupLink,
      app,
      dispatcher,
      deps,
      close() {
        stopping = true;
        closing ??= (async () => {
          const closed = (async () => {
            for (const close of closers) await close().catch(() => {});
            await storage.close();
          })();
          // A database that is down or frozen could hold a close for good
          // (results that wait to be written, a pool that waits for its connections).
          let timer: NodeJS.Timeout | undefined;
          const inTime = await Promise.race([
            closed.then(() => true),
            new Promise<boolean>((resolve) => {
              timer = setTimeout(() => resolve(false), config.shutdownTimeoutMs);
              timer.unref();
            }),
          ]);
          clearTimeout(timer);
          if (!inTime) {
            processLog.error(
              `stopping took longer than HERALD_SHUTDOWN_TIMEOUT_MS (${config.shutdownTimeoutMs} ms): giving up; results not yet written are lost and those deliveries will be sent again once their leases run out`,
            );
          }
          return inTime;
        })();
        return closing;
      },
    };
  } catch (err) {
    for (const close of closers) await close().catch(() => {});
    await storage.close();
    throw err;
  }
}
