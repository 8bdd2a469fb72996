import { useEffect, useState } from 'preact/hooks';
import type { ApiError } from '../../api/client.ts';
import { rotateSecret } from '../../api/herald.ts';
import type { Endpoint } from '../../api/types.ts';
import { ErrorAlert } from '../../components/alert.tsx';
import { Button } from '../../components/button.tsx';
import { Dialog } from '../../components/dialog.tsx';
import { SecretReveal } from '../../components/secret-reveal.tsx';
import { asApiError } from '../../lib/use-resource.ts';

interface Props {
  open: boolean;
  endpoint: Endpoint;
  onClose(): void;
  onRotated(next: Endpoint): void;
}

/** Confirm, rotate, then show the new secret once. */
export function RotateDialog({ open, endpoint, onClose, onRotated }: Props) {
  const [secret, setSecret] = useState<string>();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError>();
  useEffect(() => {
    if (!open) {
      setSecret(undefined);
      setError(undefined);
      setBusy(false);
    }
  }, [open]);

  async function rotate() {
    setBusy(true);
    setError(undefined);
    try {
      const { secret: fresh, ...next } = await rotateSecret(endpoint.id);
      setSecret(fresh);
      onRotated(next);
    } catch (err) {
      setError(asApiError(err));
    } finally {
      setBusy(false);
    }
  }

  if (secret) {
    return (
      <Dialog
        open={open}
        title="New signing secret"
        onClose={onClose}
        testId="rotate-dialog"
        footer={
          <Button variant="primary" onClick={onClose} autofocus>
            I have saved the secret
          </Button>
        }
      >
        <p role="status">The new secret is in effect: Herald signs every request from now on with it.</p>
        <SecretReveal secret={secret} />
      </Dialog>
    );
  }
  return (
    <Dialog
      open={open}
      title="Rotate the signing secret?"
      onClose={onClose}
      testId="rotate-dialog"
      footer={
        <>
          <Button onClick={onClose} autofocus>
            Cancel
          </Button>
          <Button variant="danger" busy={busy} onClick={rotate} data-testid="confirm-rotate">
            Rotate secret
          </Button>
        </>
      }
    >
      <p>
        Herald will generate a new secret for <span class="mono break">{endpoint.url}</span>. It <strong>takes effect immediately</strong>: every
        request from then on, retries of earlier events included, is signed with the new secret, and the current one ({' '}
        <span class="mono">{endpoint.secret_hint}</span>) stops being used.
      </p>
      <p>
        To avoid rejected deliveries during the switch, let your receiver <strong>accept both secrets</strong>: check the signature against the
        new one and the old one, and remove the old one once the new one is in place.
      </p>
      {error && <ErrorAlert error={error} title="The secret was not rotated" />}
    </Dialog>
  );
}
