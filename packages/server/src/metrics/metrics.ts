import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Db } from '../storage/db.ts';
import { BACKLOG_CACHE_MS, databaseGauges } from './database-gauges.ts';

/**
 * Herald's Prometheus metrics, one set per process, on a registry of its own
 * (never prom-client's global one): the composition root builds it and hands
 * it to what counts. docs/running.md ("Metrics and logs") lists each metric.
 *
 * No label carries an account, an address or anything a customer wrote
 * besides the event type, whose values are the operator's catalog. The
 * `endpoint` label (an endpoint id) is opt-in: one series per endpoint.
 */

/** How an attempt ended, as the attempt log says. */
export type AttemptOutcome = 'succeeded' | 'retrying' | 'failed';

export interface AttemptSample {
  outcome: AttemptOutcome;
  /** The answer's status class (`2xx`, `429`, `5xx`…) or the transport failure (`timeout`, `tls`…): a few fixed values. */
  result: string;
  endpointId: string;
  durationMs: number;
}

export interface MetricsOptions {
  /** HERALD_METRICS_ENDPOINT_LABELS: an `endpoint` label on the attempt metrics. */
  endpointLabels: boolean;
  /** Where the backlog and pool gauges are read, at scrape time; without it they are left out. */
  db?: Db;
  /** The database's clock (null) or a test's, for how overdue the backlog is. */
  now?: () => Date | null;
  /** How long one reading of the database serves scrapes; BACKLOG_CACHE_MS unless given (tests pass 0). */
  backlogCacheMs?: number;
}

/** Up to the 10 s receiver deadline. */
const ATTEMPT_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** From a fraction of a second (a healthy queue) to the 3 days the retry schedule can take. */
const DELIVERY_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 6 * 3600, 86_400, 3 * 86_400];

export function createMetrics(options: MetricsOptions) {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const attemptLabels = options.endpointLabels ? (['outcome', 'endpoint'] as const) : (['outcome'] as const);

  const published = new Counter({
    name: 'herald_events_published_total',
    help: 'Events accepted by the API (a replay of an event already stored is not counted), by event type.',
    labelNames: ['type'] as const,
    registers: [registry],
  });
  const attempts = new Counter({
    name: 'herald_delivery_attempts_total',
    help: 'HTTP attempts sent to receivers, by what became of the delivery (succeeded, retrying, failed) and how the attempt ended (2xx, 4xx, 429, 5xx, timeout, tls, …).',
    labelNames: [...attemptLabels, 'result'] as const,
    registers: [registry],
  });
  const attemptSeconds = new Histogram({
    name: 'herald_attempt_duration_seconds',
    help: 'Time from sending an attempt to its answer\'s headers (or its failure).',
    labelNames: attemptLabels,
    buckets: ATTEMPT_BUCKETS,
    registers: [registry],
  });
  const publishToDelivery = new Histogram({
    name: 'herald_publish_to_delivery_seconds',
    help: 'Time from an event\'s created_at to the end of the attempt that delivered it, retries included.',
    buckets: DELIVERY_BUCKETS,
    registers: [registry],
  });
  const disabled = new Counter({
    name: 'herald_endpoints_disabled_total',
    help: 'Endpoints this process disabled after too many consecutive failed deliveries.',
    registers: [registry],
  });
  if (options.db) databaseGauges(registry, options.db, { now: options.now ?? (() => null), cacheMs: options.backlogCacheMs ?? BACKLOG_CACHE_MS });

  const endpointOf = (id: string) => (options.endpointLabels ? { endpoint: id } : {});
  return {
    /** Prometheus' text format, for the Content-Type header. */
    contentType: registry.contentType,
    /** The registry in the text format; never rejects (database gauges that cannot be read keep their last values). */
    scrape: () => registry.metrics(),
    /** Events newly stored, one type per event. */
    published(types: readonly string[]): void {
      for (const type of types) published.inc({ type });
    },
    attempt(a: AttemptSample): void {
      attempts.inc({ outcome: a.outcome, result: a.result, ...endpointOf(a.endpointId) });
      attemptSeconds.observe({ outcome: a.outcome, ...endpointOf(a.endpointId) }, a.durationMs / 1000);
    },
    /** A delivery succeeded `seconds` after its event was created. */
    delivered(seconds: number): void {
      publishToDelivery.observe(Math.max(0, seconds));
    },
    endpointsDisabled(count: number): void {
      disabled.inc(count);
    },
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
