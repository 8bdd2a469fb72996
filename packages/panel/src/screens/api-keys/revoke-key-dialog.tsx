import { useState } from 'preact/hooks';
import type { ApiError } from '../../api/client.ts';
import { revokeApiKey } from '../../api/herald.ts';
import type { ApiKey } from '../../api/types.ts';
import { ErrorAlert } from '../../components/alert.tsx';
import { Button } from '../../components/button.tsx';
import { Dialog } from '../../components/dialog.tsx';
import { asApiError } from '../../lib/use-resource.ts';

export function RevokeKeyDialog({ open, apiKey, onClose, onRevoked }: { open: boolean; apiKey: ApiKey; onClose(): void; onRevoked(key: ApiKey): void }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError>();

  async function revoke() {
    setBusy(true);
    setError(undefined);
    try {
      onRevoked(await revokeApiKey(apiKey.id));
    } catch (err) {
      setError(asApiError(err));
    } finally {
      setBusy(false);
    }
  }

  return (
    <Dialog
      open={open}
      title="Revoke this API key?"
      onClose={onClose}
      testId="revoke-key-dialog"
      footer={
        <>
          <Button onClick={onClose} autofocus>
            Cancel
          </Button>
          <Button variant="danger" busy={busy} onClick={revoke} data-testid="confirm-revoke">
            Revoke key
          </Button>
        </>
      }
    >
      <p>
        From the next request on, anything that uses <strong>{apiKey.name || 'this key'}</strong> (<span class="mono">{apiKey.prefix}_…</span>)
        gets <code>401</code>: events it publishes are refused. This cannot be undone; create a new key for the service instead.
      </p>
      {error && <ErrorAlert error={error} title="The key was not revoked" />}
    </Dialog>
  );
}
