import { useState } from 'preact/hooks';
import type { ApiError } from '../api/client.ts';
import { setup } from '../api/herald.ts';
import type { Session } from '../api/types.ts';
import { Alert, ErrorAlert } from '../components/alert.tsx';
import { Button } from '../components/button.tsx';
import { describedBy, Field } from '../components/field.tsx';
import { forgetSetupToken } from '../lib/setup-token.ts';
import { asApiError } from '../lib/use-resource.ts';
import { AuthFrame } from './auth-frame.tsx';

type Form = { account_name: string; name: string; email: string; password: string };

/**
 * First run: create the account and its first user, then sign in as that
 * user. Only with the setup link Herald printed on its console (its token
 * proves the person can see that console); without it, the screen says
 * where to find it.
 */
export function Setup({ token, onSignedIn }: { token: string | undefined; onSignedIn(session: Session): void }) {
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
      const session = await setup({ ...form, account_name: form.account_name.trim(), name: form.name.trim(), email: form.email.trim(), setup_token: token ?? '' });
      forgetSetupToken();
      onSignedIn(session);
    } catch (err) {
      const apiError = asApiError(err);
      if (apiError.code === 'setup_token_invalid' || apiError.code === 'setup_done') forgetSetupToken();
      setError(apiError);
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

  if (!token) {
    return (
      <AuthFrame title="Set up Herald" docTitle="Set up" lede="No one uses this Herald yet. Setting it up needs the setup link it printed when it started.">
        <Alert tone="info" title="Open the setup link" testId="setup-link-needed">
          <p>
            When Herald starts without a user, it prints a line on its console (the terminal or service log where it runs) beginning with{' '}
            <code>First run: open</code> and a link ending in <code>/setup#token=…</code>. Open that link in this browser.
          </p>
          <p>
            If you cannot see that console, ask whoever runs Herald for the link, or to create your user with <code>herald users create</code>.
            Restarting Herald prints a new link.
          </p>
        </Alert>
      </AuthFrame>
    );
  }

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
