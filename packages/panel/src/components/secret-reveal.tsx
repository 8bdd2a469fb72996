import { useRef } from 'preact/hooks';
import { CopyButton } from './copy-button.tsx';

/**
 * The signing secret, the one time Herald shows it. It lives only in this
 * component's props: never in the URL, history or storage.
 */
export function SecretReveal({ secret }: { secret: string }) {
  const input = useRef<HTMLInputElement>(null);
  return (
    <div class="secret-reveal" data-testid="secret-reveal">
      <label for="signing-secret" class="label">
        Signing secret
      </label>
      <div class="secret-row">
        <input
          ref={input}
          id="signing-secret"
          class="input mono"
          readOnly
          value={secret}
          data-testid="secret-value"
          aria-describedby="secret-once"
          onFocus={(e) => e.currentTarget.select()}
        />
        <CopyButton text={secret} label="Copy secret" fallbackInput={() => input.current} testId="copy-secret" />
      </div>
      <p id="secret-once" class="secret-once">
        <strong>You will not see this secret again.</strong> Copy it now into your receiver's secret store (not into code or logs). Your
        receiver uses it to check the <code>X-Service-Signature</code> of every request. Afterwards Herald shows only its first characters.
      </p>
    </div>
  );
}
