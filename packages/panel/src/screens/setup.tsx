import { useState } from 'preact/hooks';
import type { ApiError } from '../api/client.ts';
import { setup } from '../api/herald.ts';
import type { Session } from '../api/types.ts';
import { ErrorAlert } from '../components/alert.tsx';
import { Button } from '../components/button.tsx';
import { describedBy, Field } from '../components/field.tsx';
import { asApiError } from '../lib/use-resource.ts';
import { AuthFrame } from './auth-frame.tsx';

type Form = { account_name: string; name: string; email: string; password: string };

/** First run: create the account and its first user, then sign in as that user. */
export function Setup({ onSignedIn }: { onSignedIn(session: Session): void }) {
  const [form, setForm] = useState<Form>({ account_name: '', name: '', email: '', password: '' });
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError>();
  const set = (key: keyof Form) => (e: { currentTarget: HTMLInputElement }) => setForm({ ...form, [key]: e.currentTarget.value });
  const fieldError = (key: keyof Form) => error?.fieldError(key);

  async function submit(e: Event) {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      onSignedIn(await setup({ ...form, account_name: form.account_name.trim(), name: form.name.trim(), email: form.email.trim() }));
    } catch (err) {
      setError(asApiError(err));
      setBusy(false);
    }
  }

  const input = (key: keyof Form, label: string, type: string, autoComplete: string, hint?: string) => (
    <Field id={`setup-${key}`} label={label} hint={hint} error={fieldError(key)}>
      <input
        id={`setup-${key}`}
        class="input"
        type={type}
        required
        autoComplete={autoComplete}
        value={form[key]}
        onInput={set(key)}
        aria-invalid={fieldError(key) ? true : undefined}
        aria-describedby={describedBy(`setup-${key}`, hint, fieldError(key))}
      />
    </Field>
  );

  return (
    <AuthFrame title="Set up Herald" docTitle="Set up" lede="No one uses this Herald yet. Create your account and the first user; you will be signed in right away.">
      <form class="form" onSubmit={submit} data-testid="setup-form">
        {error && !error.problem.errors?.length && <ErrorAlert error={error} />}
        {input('account_name', 'Account name', 'text', 'organization', 'Your company or team, e.g. Acme Logistics.')}
        {input('name', 'Your name', 'text', 'name')}
        {input('email', 'Email', 'email', 'username')}
        {input('password', 'Password', 'password', 'new-password', 'Use a long passphrase that you use nowhere else.')}
        <Button type="submit" variant="primary" busy={busy} class="btn-block">
          Create account and sign in
        </Button>
      </form>
    </AuthFrame>
  );
}
