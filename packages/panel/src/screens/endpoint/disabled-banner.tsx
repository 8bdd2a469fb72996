import { useState } from 'preact/hooks';
import type { ApiError } from '../../api/client.ts';
import { enableEndpoint } from '../../api/herald.ts';
import type { Endpoint } from '../../api/types.ts';
import { ErrorAlert } from '../../components/alert.tsx';
import { Button } from '../../components/button.tsx';
import { TimeAgo } from '../../components/time-ago.tsx';
import { formatExact } from '../../lib/time.ts';
import { asApiError } from '../../lib/use-resource.ts';

interface Props {
  endpoint: Endpoint;
  onEnabled(next: Endpoint): void;
  onRecover(): void;
  onTest(): void;
}

/** What a disabled endpoint means, since when and why, and the ways back. */
export function DisabledBanner({ endpoint: e, onEnabled, onRecover, onTest }: Props) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError>();

  async function enable() {
    setBusy(true);
    setError(undefined);
    try {
      onEnabled(await enableEndpoint(e.id));
    } catch (err) {
      setError(asApiError(err));
      setBusy(false);
    }
  }

  return (
    <section class="banner banner-danger" aria-labelledby="disabled-heading" data-testid="disabled-banner">
      <h2 id="disabled-heading" class="banner-title">
        <span aria-hidden="true">⚠ </span>This endpoint is disabled
      </h2>
      <p data-testid="disabled-by">{whoAndWhen(e)}</p>
      {e.disabled_reason && (
        <p>
          {e.disabled_by?.type === 'automatic' ? 'Why: ' : 'Reason: '}
          <strong data-testid="disabled-reason">{e.disabled_reason}</strong>
        </p>
      )}
      <p>
        No requests are sent to it. Events that arrive meanwhile are kept as skipped deliveries. Fix the receiver, send a test event to check it,
        then re-enable the endpoint and recover what it missed.
      </p>
      {error && <ErrorAlert error={error} title="The endpoint could not be re-enabled" />}
      <div class="banner-actions">
        <Button onClick={onTest} data-changes>Send a test event</Button>
        <Button variant="primary" busy={busy} onClick={enable} data-testid="re-enable" data-changes>
          Re-enable
        </Button>
        <Button onClick={onRecover} data-testid="recover-from-banner" data-changes>
          Recover skipped and failed deliveries…
        </Button>
      </div>
    </section>
  );
}

/** Who disabled it and when: "Ada Lovelace disabled it by hand in the panel 5 minutes ago (Nov 26, 2026, 09:14:03 AM GMT+1)." */
function whoAndWhen(e: Endpoint) {
  const by = e.disabled_by;
  const who =
    by?.type === 'automatic' ? (
      <>Herald disabled it automatically, after too many failed deliveries in a row,</>
    ) : by?.type === 'user' ? (
      <>
        <strong>{by.name}</strong> disabled it by hand in the panel
      </>
    ) : by?.type === 'api_key' ? (
      <>
        It was disabled by hand with the API key <strong class="mono">{by.name}</strong>
      </>
    ) : by?.type === 'portal' ? (
      <>It was disabled by hand in the embedded panel</>
    ) : (
      <>It was disabled by hand</>
    );
  if (!e.disabled_at) return <>{who}.</>;
  return (
    <>
      {who} <TimeAgo iso={e.disabled_at} /> (<span class="nowrap" data-testid="disabled-at">{formatExact(e.disabled_at)}</span>).
    </>
  );
}
