import type { Endpoint } from '../../api/types.ts';
import { Button } from '../../components/button.tsx';
import { TimeAgo } from '../../components/time-ago.tsx';
import { days } from '../../lib/rate-limit.ts';
import { formatExact } from '../../lib/time.ts';
import { FailureStreak } from './failure-streak.tsx';

/** The endpoint's settings at a glance: events, secret hint, failure streak, rate limit, custom headers, metadata, how long history is kept, dates. */
export function EndpointFacts({ endpoint: e, onRotate, onRecover }: { endpoint: Endpoint; onRotate(): void; onRecover(): void }) {
  const overlapUntil = e.previous_secret_expires_at;
  return (
    <section class="card" aria-labelledby="facts-heading">
      <h2 id="facts-heading" class="card-title">
        Details
      </h2>
      <dl class="facts">
        <dt>Events</dt>
        <dd>
          <ul class="plain-list">
            {e.event_types.map((t) => (
              <li key={t} class="mono">
                {t}
              </li>
            ))}
          </ul>
        </dd>
        <dt>Signing secret</dt>
        <dd>
          <span class="mono secret-hint" data-testid="secret-hint">
            {e.secret_hint}
          </span>
          <Button small variant="ghost" onClick={onRotate} data-changes>
            Rotate…
          </Button>
          {overlapUntil && (
            <span class="hint" data-testid="overlap-fact">
              The previous secret also signs every request until {formatExact(overlapUntil)}.{' '}
              <Button small variant="ghost" onClick={onRotate}>
                End it…
              </Button>
            </span>
          )}
        </dd>
        <dt>Signature scheme</dt>
        <dd data-testid="scheme-fact">
          {e.signature_scheme === 'standard-webhooks' ? (
            <>
              Standard Webhooks <span class="hint">(webhook-id, webhook-timestamp, webhook-signature)</span>
            </>
          ) : (
            <>
              Herald <span class="hint">(X-Service-Timestamp, X-Service-Signature)</span>
            </>
          )}
        </dd>
        <dt>Consecutive failures</dt>
        <dd>
          <FailureStreak endpoint={e} />
          <span class="hint">At {e.failure_threshold} failed deliveries in a row Herald disables the endpoint.</span>
        </dd>
        <dt>Rate limit</dt>
        <dd data-testid="rate-limit-fact">
          {e.rate_limit === null ? 'No limit' : `At most ${e.rate_limit.toLocaleString()} ${e.rate_limit === 1 ? 'request' : 'requests'} per second`}
        </dd>
        <dt>Custom headers</dt>
        <dd data-testid="headers-fact">
          {e.headers.length === 0 ? (
            'None'
          ) : (
            <ul class="plain-list">
              {e.headers.map((h) => (
                <li key={h.name} class="mono">
                  {h.name}: {h.secret ? <span class="muted">{h.value_hint} (secret)</span> : h.value}
                </li>
              ))}
            </ul>
          )}
        </dd>
        {Object.keys(e.metadata).length > 0 && (
          <>
            <dt>Metadata</dt>
            <dd data-testid="metadata-fact">
              <ul class="plain-list">
                {Object.entries(e.metadata).map(([k, v]) => (
                  <li key={k}>
                    <span class="mono">{k}</span>: {v}
                  </li>
                ))}
              </ul>
            </dd>
          </>
        )}
        <dt>Redeliver</dt>
        <dd>
          <Button small variant="ghost" onClick={onRecover} data-testid="open-recover" data-changes>
            Recover deliveries…
          </Button>
        </dd>
        <dt>Retention</dt>
        <dd data-testid="retention">
          History kept for {days(e.retention.succeeded_days)}; failed deliveries can be recovered for {days(e.retention.undelivered_days)}.
        </dd>
        <dt>Created</dt>
        <dd>
          <TimeAgo iso={e.created_at} exact />
        </dd>
      </dl>
    </section>
  );
}
