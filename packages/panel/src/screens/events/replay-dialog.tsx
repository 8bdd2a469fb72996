import { useEffect, useState } from 'preact/hooks';
import type { ApiError } from '../../api/client.ts';
import { createReplay, previewReplay, type Replay, type ReplayPreview, type ReplaySelection } from '../../api/events.ts';
import type { Endpoint } from '../../api/types.ts';
import { ErrorAlert } from '../../components/alert.tsx';
import { Button } from '../../components/button.tsx';
import { Dialog } from '../../components/dialog.tsx';
import { Field } from '../../components/field.tsx';
import { asApiError } from '../../lib/use-resource.ts';

interface Props {
  open: boolean;
  selection: ReplaySelection | undefined;
  endpoints: Endpoint[];
  onClose(): void;
  onCreated(replay: Replay): void;
}

const plural = (n: number, one: string, many = `${one}s`) => `${n.toLocaleString()} ${n === 1 ? one : many}`;

/**
 * Confirms a replay: to which endpoint (or every subscribed one), with the
 * count Herald gives for it (a dry run) before anything is sent.
 */
export function ReplayDialog({ open, selection, endpoints, onClose, onCreated }: Props) {
  const [target, setTarget] = useState('');
  const [preview, setPreview] = useState<{ target: string; result: ReplayPreview }>();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError>();
  // One Idempotency-Key per confirmation: a retried request creates one replay.
  const [key, setKey] = useState('');

  useEffect(() => {
    if (open) {
      setTarget('');
      setError(undefined);
      setBusy(false);
      setKey(crypto.randomUUID());
    }
  }, [open]);

  useEffect(() => {
    if (!open || !selection) return;
    let current = true;
    setPreview(undefined);
    setError(undefined);
    previewReplay(selection, target || null)
      .then((result) => current && setPreview({ target, result }))
      .catch((err) => current && setError(asApiError(err)));
    return () => {
      current = false;
    };
  }, [open, selection, target]);

  async function confirm() {
    if (!selection) return;
    setBusy(true);
    setError(undefined);
    try {
      onCreated(await createReplay(selection, target || null, key));
    } catch (err) {
      setError(asApiError(err));
      setBusy(false);
    }
  }

  const ready = preview && preview.target === target;
  const n = ready ? preview.result.count : 0;
  const where = target ? (endpoints.find((e) => e.id === target)?.url ?? 'the endpoint') : 'every subscribed endpoint';

  return (
    <Dialog
      open={open}
      title="Replay events"
      onClose={onClose}
      testId="replay-dialog"
      footer={
        <>
          <Button onClick={onClose} autofocus>
            Cancel
          </Button>
          <Button variant="primary" busy={busy} disabled={!ready || n === 0} onClick={confirm} data-testid="confirm-replay">
            {ready ? `Replay ${plural(n, 'event')}` : 'Replay'}
          </Button>
        </>
      }
    >
      <p>
        Herald sends each event again as a new delivery, with the same event id: receivers that deduplicate by id will see it as a repeat. Disabled endpoints
        get nothing.
      </p>
      <Field id="replay-target" label="Send to">
        <select id="replay-target" class="input" value={target} onChange={(e) => setTarget(e.currentTarget.value)} data-testid="replay-target">
          <option value="">Every subscribed endpoint</option>
          {endpoints.map((e) => (
            <option key={e.id} value={e.id} disabled={e.state === 'disabled'}>
              {e.url}
              {e.state === 'disabled' ? ' (disabled)' : ''}
            </option>
          ))}
        </select>
      </Field>
      <p class="recover-count" role="status" aria-live="polite" data-testid="replay-count">
        {error
          ? ''
          : !ready
            ? 'Counting the events…'
            : n === 0
              ? 'No event matches: nothing to replay.'
              : `${plural(n, 'event')} will be sent again to ${where}${target ? '' : ` (${plural(preview.result.endpoints, 'enabled endpoint')} now)`}.`}
      </p>
      {error && <ErrorAlert error={error} title="The replay could not be started" />}
    </Dialog>
  );
}
