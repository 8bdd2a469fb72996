import { useEffect, useState } from 'preact/hooks';
import type { ApiError } from '../../api/client.ts';
import { enableEndpoint, recoverDeliveries } from '../../api/herald.ts';
import type { Endpoint } from '../../api/types.ts';
import { ErrorAlert } from '../../components/alert.tsx';
import { Button } from '../../components/button.tsx';
import { Dialog } from '../../components/dialog.tsx';
import { describedBy, Field } from '../../components/field.tsx';
import { formatExact, fromLocalInput, toLocalInput } from '../../lib/time.ts';
import { days } from '../../lib/rate-limit.ts';
import { asApiError } from '../../lib/use-resource.ts';

interface Props {
  open: boolean;
  endpoint: Endpoint;
  onClose(): void;
  /** `next` is the endpoint after re-enabling it, when it was disabled. */
  onRecovered(count: number, next: Endpoint | undefined): void;
}

const DAY = 86_400_000;

/** The earliest time recovery reaches: failed and skipped deliveries are kept this long. */
function earliest(e: Endpoint): Date {
  return new Date(Date.now() - e.retention.undelivered_days * DAY);
}

/** A day before the endpoint was disabled (its failures started before), or a day ago; never before what recovery reaches. */
function defaultSince(e: Endpoint): string {
  const from = e.disabled_at ? Date.parse(e.disabled_at) - DAY : Date.now() - DAY;
  // Rounded up to the next minute: the input has minutes only.
  const first = Math.ceil(earliest(e).getTime() / 60_000) * 60_000;
  return toLocalInput(new Date(Math.max(from, first)));
}

/**
 * Redeliver the skipped and failed deliveries since a chosen time. A dry run
 * counts them first; Herald only redelivers to an enabled endpoint, so a
 * disabled one is re-enabled as part of confirming.
 */
export function RecoverDialog({ open, endpoint: e, onClose, onRecovered }: Props) {
  const [since, setSince] = useState(() => defaultSince(e));
  const [count, setCount] = useState<{ since: string; count: number }>();
  const [checking, setChecking] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError>();
  const sinceIso = fromLocalInput(since);
  const inFuture = sinceIso !== undefined && Date.parse(sinceIso) > Date.now();
  const tooOld = sinceIso !== undefined && Date.parse(sinceIso) < earliest(e).getTime();
  const reach = `Herald keeps failed and skipped deliveries for ${days(e.retention.undelivered_days)}`;
  const inputError = !sinceIso
    ? 'Enter a date and time.'
    : inFuture
      ? 'Choose a time in the past.'
      : tooOld
        ? `${reach}: choose ${formatExact(earliest(e).toISOString())} or later.`
        : undefined;

  useEffect(() => {
    if (open) {
      setSince(defaultSince(e));
      setError(undefined);
      setBusy(false);
    }
  }, [open]);

  // The dry run, again whenever the chosen time changes.
  useEffect(() => {
    if (!open || !sinceIso || inFuture || tooOld) {
      setCount(undefined);
      return;
    }
    let current = true;
    setChecking(true);
    setError(undefined);
    recoverDeliveries(e.id, sinceIso, true)
      .then((r) => current && setCount({ since: sinceIso, count: r.count }))
      .catch((err) => current && setError(asApiError(err)))
      .finally(() => current && setChecking(false));
    return () => {
      current = false;
    };
  }, [open, sinceIso]);

  async function confirm() {
    if (!sinceIso) return;
    setBusy(true);
    setError(undefined);
    try {
      const next = e.state === 'disabled' ? await enableEndpoint(e.id) : undefined;
      const result = await recoverDeliveries(e.id, sinceIso, false);
      onRecovered(result.count, next);
    } catch (err) {
      setError(asApiError(err));
      setBusy(false);
    }
  }

  const ready = count && count.since === sinceIso && !checking;
  const label = !ready
    ? 'Recover deliveries'
    : `${e.state === 'disabled' ? 'Re-enable and recover' : 'Recover'} ${count.count} ${count.count === 1 ? 'delivery' : 'deliveries'}`;

  return (
    <Dialog
      open={open}
      title="Recover skipped and failed deliveries"
      onClose={onClose}
      testId="recover-dialog"
      footer={
        <>
          <Button onClick={onClose}>Cancel</Button>
          <Button variant="primary" busy={busy} disabled={!ready || count.count === 0} onClick={confirm} data-testid="confirm-recover">
            {label}
          </Button>
        </>
      }
    >
      <p>
        Herald sends again, as new deliveries, the events this endpoint missed while it was disabled and those whose delivery failed, since the time
        you choose.
      </p>
      <Field id="recover-since" label="Since (your local time)" hint={`${reach}, so recovery reaches back that far.`} error={inputError}>
        <input
          id="recover-since"
          class="input"
          type="datetime-local"
          value={since}
          min={toLocalInput(earliest(e))}
          max={toLocalInput(new Date())}
          autofocus
          aria-invalid={inputError ? true : undefined}
          aria-describedby={`${describedBy('recover-since', true, inputError)} recover-count`}
          onInput={(ev) => setSince(ev.currentTarget.value)}
          data-testid="recover-since"
        />
      </Field>
      <p id="recover-count" class="recover-count" role="status" aria-live="polite" data-testid="recover-count">
        {/* A count is shown only for the time now chosen, never the previous one while the new one is counted. */}
        {inputError
          ? ''
          : !ready || !count
            ? error
              ? ''
              : 'Counting the deliveries…'
            : count.count === 0
              ? `No skipped or failed deliveries since ${formatExact(count.since)}.`
              : `${count.count} ${count.count === 1 ? 'delivery' : 'deliveries'} since ${formatExact(count.since)} will be sent again.`}
      </p>
      {e.state === 'disabled' && ready && count.count > 0 && <p class="hint">The endpoint is disabled; confirming re-enables it first.</p>}
      {error && <ErrorAlert error={error} title="The deliveries could not be recovered" />}
    </Dialog>
  );
}
