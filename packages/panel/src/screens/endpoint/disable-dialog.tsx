import { useState } from 'preact/hooks';
import type { ApiError } from '../../api/client.ts';
import { disableEndpoint } from '../../api/herald.ts';
import type { Endpoint } from '../../api/types.ts';
import { ErrorAlert } from '../../components/alert.tsx';
import { Button } from '../../components/button.tsx';
import { Dialog } from '../../components/dialog.tsx';
import { describedBy, Field } from '../../components/field.tsx';
import { asApiError } from '../../lib/use-resource.ts';

const REASON_MAX = 500;

/** Disables an endpoint by hand, after saying what that does, with an optional reason others will see. */
export function DisableDialog({ open, endpoint, onClose, onDisabled }: { open: boolean; endpoint: Endpoint; onClose(): void; onDisabled(next: Endpoint): void }) {
  const [reason, setReason] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError>();

  async function disable() {
    setBusy(true);
    setError(undefined);
    try {
      const next = await disableEndpoint(endpoint.id, reason.trim() || undefined);
      setReason('');
      setBusy(false);
      onDisabled(next);
    } catch (err) {
      setError(asApiError(err));
      setBusy(false);
    }
  }

  const reasonError = error?.fieldError('reason');
  return (
    <Dialog
      open={open}
      title="Disable this endpoint?"
      onClose={onClose}
      testId="disable-dialog"
      footer={
        <>
          <Button onClick={onClose} autofocus>
            Cancel
          </Button>
          <Button variant="danger" busy={busy} onClick={disable} data-testid="confirm-disable">
            Disable endpoint
          </Button>
        </>
      }
    >
      <p>
        Herald stops sending to <span class="mono break">{endpoint.url}</span> at once. Deliveries waiting for it, and events that arrive
        while it is disabled, are kept as skipped: after re-enabling, recover them to send them.
      </p>
      <Field id="disable-reason" label="Reason" optional hint="Shown on the endpoint while it is disabled, with your name." error={reasonError}>
        <input
          id="disable-reason"
          class="input"
          value={reason}
          maxLength={REASON_MAX}
          placeholder="Receiver down for maintenance"
          aria-invalid={reasonError ? true : undefined}
          aria-describedby={describedBy('disable-reason', true, reasonError)}
          onInput={(e) => setReason(e.currentTarget.value)}
          data-testid="disable-reason"
        />
      </Field>
      {error && !reasonError && <ErrorAlert error={error} title="The endpoint was not disabled" />}
    </Dialog>
  );
}
