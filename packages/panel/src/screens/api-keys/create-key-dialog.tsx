import { useRef, useState } from 'preact/hooks';
import type { ApiError } from '../../api/client.ts';
import { createApiKey } from '../../api/herald.ts';
import type { ApiKeyWithKey } from '../../api/types.ts';
import { ErrorAlert } from '../../components/alert.tsx';
import { Button } from '../../components/button.tsx';
import { CopyButton } from '../../components/copy-button.tsx';
import { Dialog } from '../../components/dialog.tsx';
import { describedBy, Field } from '../../components/field.tsx';
import { asApiError } from '../../lib/use-resource.ts';

const NAME_MAX = 100;

/**
 * Names a new key, creates it, and shows it the one time Herald can: the key
 * lives only in this dialog's state and is gone when the dialog closes.
 */
export function CreateKeyDialog({ open, onClose, onCreated }: { open: boolean; onClose(): void; onCreated(key: ApiKeyWithKey): void }) {
  const [name, setName] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError>();
  const [created, setCreated] = useState<ApiKeyWithKey>();
  const input = useRef<HTMLInputElement>(null);

  const close = () => {
    setCreated(undefined);
    setName('');
    setError(undefined);
    setBusy(false);
    onClose();
  };

  async function create(e: Event) {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const k = await createApiKey(name.trim());
      setCreated(k);
      onCreated(k);
    } catch (err) {
      setError(asApiError(err));
    } finally {
      setBusy(false);
    }
  }

  const nameError = error?.fieldError('name');
  return (
    <Dialog
      open={open}
      title={created ? 'Your new API key' : 'Create an API key'}
      onClose={close}
      testId="create-key-dialog"
      footer={
        created ? (
          <Button variant="primary" onClick={close} data-testid="key-done">
            I have copied it
          </Button>
        ) : (
          <>
            <Button onClick={close}>Cancel</Button>
            <Button variant="primary" busy={busy} onClick={(e) => void create(e)} data-testid="confirm-create-key">
              Create key
            </Button>
          </>
        )
      }
    >
      {created ? (
        <div class="secret-reveal" data-testid="key-reveal">
          <label for="new-api-key" class="label">
            API key{created.name ? ` "${created.name}"` : ''}
          </label>
          <div class="secret-row">
            <input
              ref={input}
              id="new-api-key"
              class="input mono"
              readOnly
              value={created.key}
              data-testid="key-value"
              aria-describedby="key-once"
              onFocus={(e) => e.currentTarget.select()}
            />
            <CopyButton text={created.key} label="Copy key" fallbackInput={() => input.current} testId="copy-key" />
          </div>
          <p id="key-once" class="secret-once">
            <strong>You will not see this key again.</strong> Store it in your service's secret store (not in code or logs). Afterwards Herald
            shows only its prefix, <span class="mono">{created.prefix}_…</span>.
          </p>
        </div>
      ) : (
        <form id="create-key-form" class="form" onSubmit={create}>
          <Field id="api-key-name" label="Name" optional hint="What uses it, e.g. billing service: shown in the list, so you know which key to revoke." error={nameError}>
            <input
              id="api-key-name"
              class="input"
              value={name}
              maxLength={NAME_MAX}
              autofocus
              aria-invalid={nameError ? true : undefined}
              aria-describedby={describedBy('api-key-name', true, nameError)}
              onInput={(e) => setName(e.currentTarget.value)}
              data-testid="api-key-name"
            />
          </Field>
          {error && !nameError && <ErrorAlert error={error} title="The key was not created" />}
        </form>
      )}
    </Dialog>
  );
}
