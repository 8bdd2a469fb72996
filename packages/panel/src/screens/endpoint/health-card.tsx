import type { Attempt } from '../../api/types.ts';
import { Loading } from '../../components/loading.tsx';
import { formatDuration, formatExact } from '../../lib/time.ts';
import { healthOf } from './health.ts';

const W = 300;
const H = 84;
const GAP = 1;

/**
 * Delivery health over the recent attempts: the success rate, and a bar per
 * attempt (oldest on the left) whose height is its duration and whose colour
 * is its outcome. Drawn here as plain SVG; each bar has a tooltip.
 */
export function HealthCard({ attempts, loading }: { attempts: Attempt[] | undefined; loading: boolean }) {
  return (
    <section class="card" aria-labelledby="health-heading" data-testid="health">
      <h2 id="health-heading" class="card-title">
        Delivery health
      </h2>
      {loading && <Loading />}
      {attempts && attempts.length === 0 && <p class="muted">No attempts yet: the chart fills in as Herald sends requests.</p>}
      {attempts && attempts.length > 0 && <HealthChart attempts={attempts} />}
    </section>
  );
}

function HealthChart({ attempts }: { attempts: Attempt[] }) {
  const h = healthOf(attempts);
  const chronological = [...attempts].reverse();
  const slot = W / Math.max(chronological.length, 20);
  // Square-root scale: one slow attempt does not flatten all the others.
  const scale = (ms: number) => Math.max(3, Math.sqrt(ms / Math.max(1, h.maxMs)) * (H - 4));
  const rate = Math.round(h.successRate * 1000) / 10;
  const summary = `${rate}% of the last ${h.total} attempts succeeded. Median time ${formatDuration(h.medianMs)}, 95th percentile ${formatDuration(h.p95Ms)}.`;

  return (
    <>
      <div class="stats">
        <div class="stat">
          <span class={`stat-value ${rate >= 99 ? 'good' : rate >= 90 ? 'warn' : 'bad'}`} data-testid="success-rate">
            {rate}%
          </span>
          <span class="stat-label">
            succeeded ({h.succeeded} of {h.total})
          </span>
        </div>
        <div class="stat">
          <span class="stat-value">{formatDuration(h.medianMs)}</span>
          <span class="stat-label">median</span>
        </div>
        <div class="stat">
          <span class="stat-value">{formatDuration(h.p95Ms)}</span>
          <span class="stat-label">p95</span>
        </div>
      </div>
      <svg class="chart" viewBox={`0 0 ${W} ${H}`} preserveAspectRatio="none" role="img" aria-label={summary} data-testid="health-chart">
        <line x1="0" x2={W} y1={H - 0.5} y2={H - 0.5} class="chart-axis" />
        {chronological.map((a, i) => {
          const height = scale(a.duration_ms);
          return (
            <rect key={a.id} x={i * slot + GAP / 2} y={H - height} width={Math.max(1, slot - GAP)} height={height} class={`bar bar-${a.outcome}`}>
              <title>
                {`${a.status_code ?? 'No response'} · ${a.outcome} · ${formatDuration(a.duration_ms)} · ${formatExact(a.started_at)}`}
              </title>
            </rect>
          );
        })}
      </svg>
      <p class="chart-legend" aria-hidden="true">
        <span class="legend legend-succeeded">Succeeded</span>
        <span class="legend legend-retrying">Will retry</span>
        <span class="legend legend-failed">Failed</span>
        <span class="muted">Height: time taken · oldest left</span>
      </p>
    </>
  );
}
