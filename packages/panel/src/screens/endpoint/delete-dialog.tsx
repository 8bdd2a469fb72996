import { useState } from 'preact/hooks';
import type { ApiError } from '../../api/client.ts';
import { deleteEndpoint } from '../../api/herald.ts';
import type { Endpoint } from '../../api/types.ts';
import { ErrorAlert } from '../../components/alert.tsx';
import { Button } from '../../components/button.tsx';
import { Dialog } from '../../components/dialog.tsx';
import { asApiError } from '../../lib/use-resource.ts';

export function DeleteDialog({ open, endpoint, onClose, onDeleted }: { open: boolean; endpoint: Endpoint; onClose(): void; onDeleted(): void }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError>();

  async function remove() {
    setBusy(true);
    setError(undefined);
    try {
      await deleteEndpoint(endpoint.id);
      onDeleted();
    } catch (err) {
      setError(asApiError(err));
      setBusy(false);
    }
  }

  return (
    <Dialog
      open={open}
      title="Delete this endpoint?"
      onClose={onClose}
      testId="delete-dialog"
      footer={
        <>
          <Button onClick={onClose} autofocus>
            Cancel
          </Button>
          <Button variant="danger" busy={busy} onClick={remove} data-testid="confirm-delete">
            Delete endpoint
          </Button>
        </>
      }
    >
      <p>
        Herald stops sending events to <span class="mono break">{endpoint.url}</span> and deletes its attempt log and pending deliveries. The
        events themselves stay. This cannot be undone.
      </p>
      {error && <ErrorAlert error={error} title="The endpoint was not deleted" />}
    </Dialog>
  );
}
