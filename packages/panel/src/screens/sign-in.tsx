import { useState } from 'preact/hooks';
import { ApiError } from '../api/client.ts';
import { signIn } from '../api/herald.ts';
import type { Session } from '../api/types.ts';
import { ErrorAlert } from '../components/alert.tsx';
import { Button } from '../components/button.tsx';
import { Field } from '../components/field.tsx';
import { AuthFrame } from './auth-frame.tsx';
import { asApiError } from '../lib/use-resource.ts';

export function SignIn({ onSignedIn, notice }: { onSignedIn(session: Session): void; notice?: string }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError>();

  async function submit(e: Event) {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      onSignedIn(await signIn(email.trim(), password));
    } catch (err) {
      const apiError = asApiError(err);
      setError(
        apiError.status === 401
          ? new ApiError({ ...apiError.problem, title: 'Sign-in failed', detail: 'That email and password do not match an account. Check both and try again.' })
          : apiError.status === 404
            ? new ApiError({ ...apiError.problem, title: 'Sign-in is not available', detail: 'This Herald does not offer panel sign-in yet. Ask your operator to update it; the HTTP API with an API key still works.' })
            : apiError,
      );
      setBusy(false);
    }
  }

  return (
    <AuthFrame title="Sign in to Herald" docTitle="Sign in">
      {notice && <p class="auth-notice" role="status">{notice}</p>}
      <form class="form" onSubmit={submit} data-testid="sign-in-form">
        {error && <ErrorAlert error={error} />}
        <Field id="email" label="Email">
          <input id="email" class="input" type="email" name="email" autoComplete="username" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
        </Field>
        <Field id="password" label="Password">
          <input
            id="password"
            class="input"
            type="password"
            name="password"
            autoComplete="current-password"
            required
            value={password}
            onInput={(e) => setPassword(e.currentTarget.value)}
          />
        </Field>
        <Button type="submit" variant="primary" busy={busy} class="btn-block">
          Sign in
        </Button>
      </form>
    </AuthFrame>
  );
}
