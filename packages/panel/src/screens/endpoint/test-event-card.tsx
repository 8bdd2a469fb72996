import type { RefObject } from 'preact';
import { useState } from 'preact/hooks';
import type { ApiError } from '../../api/client.ts';
import { listEventTypes, sendTest } from '../../api/herald.ts';
import type { AttemptDetail, Endpoint } from '../../api/types.ts';
import { ErrorAlert } from '../../components/alert.tsx';
import { OutcomeBadge } from '../../components/badge.tsx';
import { Button } from '../../components/button.tsx';
import { formatDuration } from '../../lib/time.ts';
import { asApiError, useResource } from '../../lib/use-resource.ts';
import { AttemptDetailView } from './attempt-detail-view.tsx';

interface Props {
  endpoint: Endpoint;
  selectRef: RefObject<HTMLSelectElement>;
  onSent(): void;
}

/**
 * One signed request now, never retried, not counted towards disabling, and
 * allowed while the endpoint is disabled, so a fix can be checked first.
 */
export function TestEventCard({ endpoint, selectRef, onSent }: Props) {
  const catalog = useResource((signal) => listEventTypes(signal), 'event-types');
  const [type, setType] = useState('');
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<AttemptDetail>();
  const [error, setError] = useState<ApiError>();
  const [showDetail, setShowDetail] = useState(false);

  async function send() {
    setBusy(true);
    setError(undefined);
    setResult(undefined);
    setShowDetail(false);
    try {
      setResult(await sendTest(endpoint.id, type || undefined));
      onSent();
    } catch (err) {
      setError(asApiError(err));
    } finally {
      setBusy(false);
    }
  }

  // Any published type with an example can be tested, subscribed or not: the receiver may be about to subscribe to it.
  const published = (catalog.data?.data ?? []).filter((t) => t.example !== null && t.example !== undefined);
  return (
    <section class="card" aria-labelledby="test-heading" data-testid="test-event" data-changes>
      <h2 id="test-heading" class="card-title">
        Send a test event
      </h2>
      <p class="muted">
        Herald signs and sends one request right now, and shows what your receiver answered. Tests are never retried and do not count towards
        disabling{endpoint.state === 'disabled' ? ', and they work while the endpoint is disabled' : ''}.
      </p>
      <div class="inline-form">
        <div class="field field-grow">
          <label for="test-type" class="label">
            Event
          </label>
          <select id="test-type" ref={selectRef} class="input" value={type} onChange={(e) => setType(e.currentTarget.value)} data-testid="test-type">
            <option value="">webhook.test (a small test event)</option>
            {published.map((t) => (
              <option key={t.name} value={t.name}>
                {t.name} (example record)
              </option>
            ))}
          </select>
        </div>
        <Button variant="primary" busy={busy} onClick={send} data-testid="send-test">
          Send test event
        </Button>
      </div>
      <div aria-live="polite" data-testid="test-result">
        {busy && <p class="muted">Sending… (your receiver has up to 10 seconds to answer)</p>}
        {result && (
          <div class={`test-result test-result-${result.outcome === 'succeeded' ? 'ok' : 'bad'}`}>
            <p class="test-result-line">
              <OutcomeBadge outcome={result.outcome === 'retrying' ? 'failed' : result.outcome} statusCode={result.status_code} />
              <span>
                {result.outcome === 'succeeded' ? 'Your receiver accepted the test event' : 'The test event was not accepted'} in{' '}
                <strong data-testid="test-duration">{formatDuration(result.duration_ms)}</strong>.
              </span>
            </p>
            {result.error && (
              <p class="test-error" data-testid="test-error">
                {result.error}
              </p>
            )}
            <Button small variant="ghost" aria-expanded={showDetail} aria-controls="test-detail" onClick={() => setShowDetail(!showDetail)}>
              {showDetail ? 'Hide request and response' : 'Show request and response'}
            </Button>
            {showDetail && (
              <div id="test-detail">
                <AttemptDetailView attempt={result} />
              </div>
            )}
          </div>
        )}
      </div>
      {error && <ErrorAlert error={error} title="The test event was not sent" onRetry={send} />}
    </section>
  );
}
