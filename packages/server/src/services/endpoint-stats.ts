import { invalidField } from '../errors.ts';
import { attemptLatency, countDeliveriesByBucket, type DeliveryState } from '../storage/queries/endpoint-stats.ts';
import type { ServiceDeps } from './deps.ts';
import { getEndpoint } from './endpoints.ts';

/** The windows a health summary covers, each cut into buckets for a chart. */
export const STATS_WINDOWS = {
  '1h': { ms: 3_600_000, buckets: 12 },
  '24h': { ms: 86_400_000, buckets: 24 },
  '7d': { ms: 7 * 86_400_000, buckets: 28 },
} as const;
export type StatsWindow = keyof typeof STATS_WINDOWS;

/** Deliveries counted per state are read up to this many; beyond it the counts say `capped`. */
export const STATS_DELIVERY_CAP = 50_000;
/** Requests whose time the percentiles are taken over, newest first. */
export const STATS_LATENCY_SAMPLE = 1000;

type Counts = Record<DeliveryState, number>;
const zero = (): Counts => ({ succeeded: 0, failed: 0, pending: 0, skipped: 0 });

export interface EndpointStats {
  window: StatsWindow;
  from: Date;
  /** The end of the last bucket: now, rounded up to a whole bucket. */
  to: Date;
  deliveries: Counts & { total: number };
  /** Succeeded out of those settled (succeeded or failed), 0..1; null when none has settled. */
  success_rate: number | null;
  capped: boolean;
  buckets: Array<{ start: Date } & Counts>;
  latency: { requests: number; p50_ms: number | null; p95_ms: number | null; p99_ms: number | null; max_ms: number | null };
}

/**
 * An endpoint's health over a window: its deliveries (each counted once,
 * however many attempts it took; tests are not deliveries) by state and
 * time, and the time its requests took, as percentiles.
 */
export async function endpointStats(deps: ServiceDeps, accountId: string, id: string, window: unknown): Promise<EndpointStats> {
  const name = (window ?? '24h') as StatsWindow;
  if (typeof name !== 'string' || !Object.hasOwn(STATS_WINDOWS, name)) {
    throw invalidField('query.window', `must be one of ${Object.keys(STATS_WINDOWS).join(', ')}`);
  }
  const endpoint = await getEndpoint(deps, accountId, id);
  const { ms, buckets } = STATS_WINDOWS[name];
  const bucketMs = ms / buckets;
  const to = deps.clock();
  // Buckets end on a whole bucket, so a chart does not shift with every refresh.
  const end = new Date(Math.ceil(to.getTime() / bucketMs) * bucketMs);
  const from = new Date(end.getTime() - ms);
  const rows = await countDeliveriesByBucket(deps.db, { accountId, endpointId: endpoint.id, from, to: end, bucketMs, cap: STATS_DELIVERY_CAP });
  const latency = await attemptLatency(deps.db, { accountId, endpointId: endpoint.id, from, limit: STATS_LATENCY_SAMPLE });
  const series = Array.from({ length: buckets }, (_, i) => ({ start: new Date(from.getTime() + i * bucketMs), ...zero() }));
  const totals = zero();
  for (const r of rows) {
    const slot = series[Math.min(buckets - 1, Math.max(0, r.bucket))]!;
    slot[r.state] += r.count;
    totals[r.state] += r.count;
  }
  const settled = totals.succeeded + totals.failed;
  const num = (v: number | string | null) => (v === null ? null : Number(v));
  return {
    window: name,
    from,
    to: end,
    deliveries: { ...totals, total: totals.succeeded + totals.failed + totals.pending + totals.skipped },
    success_rate: settled === 0 ? null : totals.succeeded / settled,
    capped: Object.values(totals).some((n) => n >= STATS_DELIVERY_CAP),
    buckets: series,
    latency: { requests: latency.count, p50_ms: num(latency.p50), p95_ms: num(latency.p95), p99_ms: num(latency.p99), max_ms: num(latency.max) },
  };
}
