import { useEffect, useState } from 'preact/hooks';
import type { ApiError } from '../../api/client.ts';
import { endSecretOverlap, rotateSecret } from '../../api/herald.ts';
import type { Endpoint } from '../../api/types.ts';
import { Alert, ErrorAlert } from '../../components/alert.tsx';
import { Button } from '../../components/button.tsx';
import { Dialog } from '../../components/dialog.tsx';
import { SecretReveal } from '../../components/secret-reveal.tsx';
import { formatExact } from '../../lib/time.ts';
import { asApiError } from '../../lib/use-resource.ts';

interface Props {
  open: boolean;
  endpoint: Endpoint;
  onClose(): void;
  /** The endpoint as it is after a rotation, or after its overlap was ended. */
  onRotated(next: Endpoint): void;
}

/** How long the old secret may stay valid (the API takes up to 7 days). */
const OVERLAPS = [
  { seconds: 3_600, label: '1 hour' },
  { seconds: 86_400, label: '24 hours' },
  { seconds: 3 * 86_400, label: '3 days' },
  { seconds: 7 * 86_400, label: '7 days' },
] as const;

/**
 * Choose when the current secret stops (at once, or after an overlap during
 * which every request carries both signatures), rotate, then show the new
 * secret once. While an overlap runs, it says until when and can end it now.
 */
export function RotateDialog({ open, endpoint, onClose, onRotated }: Props) {
  const [secret, setSecret] = useState<string>();
  const [rotated, setRotated] = useState<Endpoint>();
  const [keepOld, setKeepOld] = useState(false);
  const [overlap, setOverlap] = useState<number>(86_400);
  const [busy, setBusy] = useState(false);
  const [ending, setEnding] = useState(false);
  const [error, setError] = useState<ApiError>();
  useEffect(() => {
    if (!open) {
      setSecret(undefined);
      setRotated(undefined);
      setKeepOld(false);
      setError(undefined);
      setBusy(false);
    }
  }, [open]);

  async function rotate() {
    setBusy(true);
    setError(undefined);
    try {
      const { secret: fresh, ...next } = await rotateSecret(endpoint.id, keepOld ? overlap : 0);
      setSecret(fresh);
      setRotated(next);
      onRotated(next);
    } catch (err) {
      setError(asApiError(err));
    } finally {
      setBusy(false);
    }
  }

  async function endOverlap() {
    setEnding(true);
    setError(undefined);
    try {
      onRotated(await endSecretOverlap(endpoint.id));
    } catch (err) {
      setError(asApiError(err));
    } finally {
      setEnding(false);
    }
  }

  if (secret) {
    const until = rotated?.previous_secret_expires_at;
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
        {until ? (
          <p role="status" data-testid="rotated-with-overlap">
            The new secret is in effect. Until <strong>{formatExact(until)}</strong> every request also carries a signature made with the old
            secret, so your receiver can verify with either while you update it; then the old secret is erased.
          </p>
        ) : (
          <p role="status">The new secret is in effect: Herald signs every request from now on with it, and the old secret is discarded.</p>
        )}
        <SecretReveal secret={secret} />
      </Dialog>
    );
  }
  const running = endpoint.previous_secret_expires_at;
  const header = endpoint.signature_scheme === 'standard-webhooks' ? 'webhook-signature' : 'X-Service-Signature';
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
      {running && (
        <Alert tone="info" title="An overlap is running" testId="overlap-running">
          <p>
            The previous secret still signs every request, next to the current one ({' '}
            <span class="mono">{endpoint.secret_hint}</span>), until <strong>{formatExact(running)}</strong>.
          </p>
          <Button small busy={ending} onClick={endOverlap} data-testid="end-overlap">
            End overlap now
          </Button>
        </Alert>
      )}
      <p>
        Herald will generate a new secret for <span class="mono break">{endpoint.url}</span>. Every request from then on, retries of earlier
        events included, is signed with it.
      </p>
      <fieldset class="field fieldset" data-testid="rotate-when">
        <legend class="label">What happens to the current secret ({endpoint.secret_hint})?</legend>
        <label class="choice">
          <input type="radio" name="rotate-when" checked={!keepOld} onChange={() => setKeepOld(false)} data-testid="rotate-immediately" />
          <span>
            <strong>It stops immediately.</strong> Your receiver must have the new secret before the next request arrives; until then it
            rejects them and Herald retries them.
          </span>
        </label>
        <label class="choice">
          <input type="radio" name="rotate-when" checked={keepOld} onChange={() => setKeepOld(true)} data-testid="rotate-overlap" />
          <span>
            <strong>
              It stays valid for{' '}
              <select
                class="input input-inline"
                aria-label="How long the current secret stays valid"
                value={String(overlap)}
                onChange={(e) => {
                  setOverlap(Number(e.currentTarget.value));
                  setKeepOld(true);
                }}
                data-testid="overlap-length"
              >
                {OVERLAPS.map((o) => (
                  <option key={o.seconds} value={String(o.seconds)}>
                    {o.label}
                  </option>
                ))}
              </select>
            </strong>
            . Each request carries two signatures in {header}, the new one first, so your receiver keeps working with either secret while you
            update it.
          </span>
        </label>
      </fieldset>
      <p class="hint" data-testid="strict-receiver-note">
        Choose <strong>immediately</strong> if your receiver compares the whole {header} header with one expected value instead of checking
        each signature in it: a header with two signatures would not match. Receivers that use @herald/verify or a Standard Webhooks library
        accept either.
      </p>
      {error && <ErrorAlert error={error} title="The secret was not rotated" />}
    </Dialog>
  );
}
