import { useState } from 'preact/hooks';
import { getEndpointStats } from '../../api/herald.ts';
import type { DeliveryState, EndpointStats, StatsWindow } from '../../api/types.ts';
import { ErrorAlert } from '../../components/alert.tsx';
import { Loading } from '../../components/loading.tsx';
import { formatDuration, formatExact } from '../../lib/time.ts';
import { useResource } from '../../lib/use-resource.ts';

const WINDOWS: Array<{ value: StatsWindow; label: string; long: string; bucket: string }> = [
  { value: '1h', label: '1h', long: 'the last hour', bucket: '5 minutes' },
  { value: '24h', label: '24h', long: 'the last 24 hours', bucket: 'hour' },
  { value: '7d', label: '7d', long: 'the last 7 days', bucket: '6 hours' },
];

const W = 300;
const H = 84;
const GAP = 2;
/** Bottom to top in each bar. */
const STACK: Array<{ state: DeliveryState; label: string }> = [
  { state: 'succeeded', label: 'Succeeded' },
  { state: 'failed', label: 'Failed' },
  { state: 'skipped', label: 'Skipped' },
  { state: 'pending', label: 'Pending' },
];

/**
 * Delivery health over a chosen window, from GET /v1/endpoints/:id/stats:
 * the success rate per delivery (however many attempts each took; tests are
 * not deliveries), latency percentiles, and the deliveries per time bucket as
 * stacked bars, so one slow request cannot flatten the chart.
 * `version` changes when the page refreshes what it shows.
 */
export function HealthCard({ endpointId, version }: { endpointId: string; version: number }) {
  const [span, setSpan] = useState<StatsWindow>('24h');
  const stats = useResource((signal) => getEndpointStats(endpointId, span, signal), `${endpointId}:${span}:${version}`);

  return (
    <section class="card" aria-labelledby="health-heading" data-testid="health">
      <div class="health-head">
        <h2 id="health-heading" class="card-title">
          Delivery health
        </h2>
        <div class="segmented" role="group" aria-label="Time window">
          {WINDOWS.map((w) => (
            <button
              key={w.value}
              type="button"
              class="segment"
              aria-pressed={w.value === span}
              aria-label={w.long}
              onClick={() => setSpan(w.value)}
              data-testid={`window-${w.value}`}
            >
              {w.label}
            </button>
          ))}
        </div>
      </div>
      {stats.error && <ErrorAlert error={stats.error} title="Delivery health could not be loaded" onRetry={stats.reload} />}
      {!stats.data && stats.loading && <Loading />}
      {/* Labelled by the window the numbers are for, which may still be the previous one while the next loads. */}
      {stats.data && <Health stats={stats.data} long={WINDOWS.find((w) => w.value === stats.data!.window)!.long} />}
    </section>
  );
}

function Health({ stats: s, long }: { stats: EndpointStats; long: string }) {
  const d = s.deliveries;
  const rate = s.success_rate === null ? null : Math.round(s.success_rate * 1000) / 10;
  const settled = d.succeeded + d.failed;
  const l = s.latency;
  return (
    <>
      <div class="stats">
        <div class="stat">
          <span
            class={`stat-value ${rate === null ? '' : rate >= 99 ? 'good' : rate >= 90 ? 'warn' : 'bad'}`}
            data-testid="success-rate"
          >
            {rate === null ? '–' : `${rate}%`}
          </span>
          <span class="stat-label" data-testid="success-detail">
            {settled === 0 ? `no delivery settled in ${long}` : `of ${settled} deliveries succeeded`}
          </span>
        </div>
        <div class="stat">
          <span class="stat-value" data-testid="latency-p50">
            {l.p50_ms === null ? '–' : formatDuration(l.p50_ms)}
          </span>
          <span class="stat-label">p50</span>
        </div>
        <div class="stat">
          <span class="stat-value" data-testid="latency-p95">
            {l.p95_ms === null ? '–' : formatDuration(l.p95_ms)}
          </span>
          <span class="stat-label">p95</span>
        </div>
        <div class="stat">
          <span class="stat-value" data-testid="latency-p99">
            {l.p99_ms === null ? '–' : formatDuration(l.p99_ms)}
          </span>
          <span class="stat-label">p99</span>
        </div>
      </div>
      <p class="muted small" data-testid="delivery-counts">
        {d.total === 0
          ? `No deliveries in ${long}. Test events are not counted.`
          : `${d.total} ${d.total === 1 ? 'delivery' : 'deliveries'} in ${long}: ${d.succeeded} succeeded, ${d.failed} failed, ${d.skipped} skipped, ${d.pending} pending.`}
        {s.capped && ' Counted up to 50,000 of each.'}
        {l.requests > 0 && ` Latency of the last ${l.requests} ${l.requests === 1 ? 'request' : 'requests'}.`}
      </p>
      <Chart stats={s} long={long} />
    </>
  );
}

function Chart({ stats: s, long }: { stats: EndpointStats; long: string }) {
  const max = Math.max(1, ...s.buckets.map((b) => b.succeeded + b.failed + b.skipped + b.pending));
  const slot = W / s.buckets.length;
  const bucket = WINDOWS.find((w) => w.value === s.window)!.bucket;
  const summary = `Deliveries per ${bucket} over ${long}, from ${formatExact(s.from)} to ${formatExact(s.to)}.`;
  return (
    <>
      <svg class="chart" viewBox={`0 0 ${W} ${H}`} preserveAspectRatio="none" role="img" aria-label={summary} data-testid="health-chart">
        <line x1="0" x2={W} y1={H - 0.5} y2={H - 0.5} class="chart-axis" />
        {s.buckets.map((b, i) => {
          let y = H;
          const total = b.succeeded + b.failed + b.skipped + b.pending;
          const title = `${formatExact(b.start)}: ${total} ${total === 1 ? 'delivery' : 'deliveries'}${
            total ? ` (${STACK.filter((x) => b[x.state] > 0).map((x) => `${b[x.state]} ${x.label.toLowerCase()}`).join(', ')})` : ''
          }`;
          return (
            <g key={b.start} data-testid="health-bucket">
              <title>{title}</title>
              <rect x={i * slot} y={0} width={slot} height={H} class="bar-hit" />
              {STACK.map(({ state }) => {
                const n = b[state];
                if (n === 0) return null;
                const h = Math.max(2, (n / max) * (H - 4));
                y -= h;
                return <rect key={state} x={i * slot + GAP / 2} y={y} width={Math.max(1, slot - GAP)} height={h} class={`bar bar-${state}`} />;
              })}
            </g>
          );
        })}
      </svg>
      <p class="chart-legend" aria-hidden="true">
        {STACK.map((x) => (
          <span key={x.state} class={`legend legend-${x.state}`}>
            {x.label}
          </span>
        ))}
        <span class="muted">Height: deliveries · oldest left</span>
      </p>
    </>
  );
}
