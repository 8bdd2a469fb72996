import { useRef, useState } from 'preact/hooks';
import type { ApiError } from '../../api/client.ts';
import { listEventTypes } from '../../api/herald.ts';
import type { Endpoint, EndpointInput, SignatureScheme } from '../../api/types.ts';
import { ErrorAlert } from '../../components/alert.tsx';
import { Button } from '../../components/button.tsx';
import { describedBy, Field } from '../../components/field.tsx';
import { Link } from '../../components/link.tsx';
import { Loading } from '../../components/loading.tsx';
import { checkEndpointUrl } from '../../lib/endpoint-url.ts';
import { afterPointerRelease } from '../../lib/after-pointer.ts';
import { parseRateLimit } from '../../lib/rate-limit.ts';
import { asApiError, useResource } from '../../lib/use-resource.ts';
import { EventTypePicker } from './event-type-picker.tsx';
import { headerRows, HeadersEditor, headersInput, type HeaderRow } from './headers-editor.tsx';
import { MetadataEditor, metadataInput, metadataRows, type MetadataRow } from './metadata-editor.tsx';

interface Props {
  /** `initial_headers` and `initial_metadata`: the endpoint's, as shown (a secret header has no value). */
  initial: EndpointInput & { initial_headers?: Endpoint['headers']; initial_metadata?: Endpoint['metadata'] };
  submitLabel: string;
  cancelHref: string;
  onSubmit(input: EndpointInput): Promise<void>;
}

type Errors = Partial<Record<'url' | 'event_types' | 'description' | 'rate_limit' | 'headers' | 'metadata', string>>;

/** The server's message for a header, naming the row it came from ("Header 2: …"). */
function headerError(apiError: ApiError, rowOf: number[]): string | undefined {
  const hit = apiError.problem.errors?.find((e) => e.field === 'headers' || e.field.startsWith('headers['));
  if (!hit) return undefined;
  const index = /^headers\[(\d+)\]/.exec(hit.field)?.[1];
  return index === undefined ? hit.message : `Header ${(rowOf[Number(index)] ?? Number(index)) + 1}: ${hit.message}`;
}

/**
 * Add and edit share this form. The address is checked here as the user
 * leaves the field and again on submit; what the server still refuses comes
 * back as field errors and is shown at the same place.
 */
export function EndpointForm({ initial, submitLabel, cancelHref, onSubmit }: Props) {
  const catalog = useResource((signal) => listEventTypes(signal), 'event-types');
  const [url, setUrl] = useState(initial.url);
  const [description, setDescription] = useState(initial.description ?? '');
  const [types, setTypes] = useState<string[]>(initial.event_types);
  const [rateLimit, setRateLimit] = useState(initial.rate_limit == null ? '' : String(initial.rate_limit));
  const [headers, setHeaders] = useState<HeaderRow[]>(() => headerRows(initial.initial_headers));
  const [metadata, setMetadata] = useState<MetadataRow[]>(() => metadataRows(initial.initial_metadata));
  const [scheme, setScheme] = useState<SignatureScheme>(initial.signature_scheme ?? 'herald');
  const [errors, setErrors] = useState<Errors>({});
  const [formError, setFormError] = useState<ApiError>();
  const [busy, setBusy] = useState(false);
  const urlInput = useRef<HTMLInputElement>(null);
  const descInput = useRef<HTMLTextAreaElement>(null);
  const typesGroup = useRef<HTMLFieldSetElement>(null);
  const rateInput = useRef<HTMLInputElement>(null);
  const rate = parseRateLimit(rateLimit);

  function check(): Errors {
    const found: Errors = {};
    const urlProblem = checkEndpointUrl(url);
    if (urlProblem) found.url = urlProblem;
    if (types.length === 0) found.event_types = 'Choose at least one event type for this endpoint to receive.';
    if (description.length > 500) found.description = `Keep the description to 500 characters (it has ${description.length}).`;
    if ('error' in rate) found.rate_limit = rate.error;
    return found;
  }

  function focusFirst(found: Errors) {
    if (found.url) urlInput.current?.focus();
    else if (found.event_types) typesGroup.current?.querySelector<HTMLInputElement>('input')?.focus();
    else if (found.description) descInput.current?.focus();
    else if (found.rate_limit) rateInput.current?.focus();
  }

  async function submit(e: Event) {
    e.preventDefault();
    setFormError(undefined);
    const found = check();
    setErrors(found);
    if (Object.keys(found).length) return focusFirst(found);
    setBusy(true);
    const custom = headersInput(headers);
    try {
      // Always sent: an emptied field removes the limit the endpoint had.
      await onSubmit({
        url: url.trim(),
        event_types: types,
        description: description.trim(),
        rate_limit: 'value' in rate ? rate.value : null,
        headers: custom.headers,
        metadata: metadataInput(metadata),
        signature_scheme: scheme,
      });
    } catch (err) {
      const apiError = asApiError(err);
      const fromServer: Errors = {
        url: apiError.fieldError('url'),
        event_types: apiError.fieldError('event_types'),
        description: apiError.fieldError('description'),
        rate_limit: apiError.fieldError('rate_limit'),
        headers: headerError(apiError, custom.rowOf),
        metadata: apiError.fieldError('metadata'),
      };
      if (Object.values(fromServer).some(Boolean)) {
        setErrors(fromServer);
        focusFirst(fromServer);
      } else {
        setFormError(apiError);
      }
      setBusy(false);
    }
  }

  const urlHint = 'The HTTPS address of your receiver. Herald sends each event there as a signed POST request.';
  const rateHint =
    'The most requests per second Herald sends to this endpoint, from 1 to 10,000, so a receiver with a quota of its own is not overrun. Leave it empty for no limit. ' +
    'Either way, Herald slows down by itself while the receiver answers 429 (too many requests) or 503.';
  return (
    <form class="form card" onSubmit={submit} noValidate data-testid="endpoint-form">
      {formError && <ErrorAlert error={formError} />}
      <Field id="endpoint-url" label="Endpoint URL" hint={urlHint} error={errors.url}>
        <input
          ref={urlInput}
          id="endpoint-url"
          class="input mono"
          type="url"
          inputMode="url"
          autoComplete="url"
          spellcheck={false}
          placeholder="https://example.com/webhooks/herald"
          value={url}
          required
          aria-invalid={errors.url ? true : undefined}
          aria-describedby={describedBy('endpoint-url', urlHint, errors.url)}
          onInput={(e) => {
            setUrl(e.currentTarget.value);
            // Clear a stale message as soon as the address becomes acceptable.
            if (errors.url && !checkEndpointUrl(e.currentTarget.value)) setErrors({ ...errors, url: undefined });
          }}
          onBlur={(e) => {
            const value = e.currentTarget.value;
            if (value.trim()) afterPointerRelease(() => setErrors((prev) => ({ ...prev, url: checkEndpointUrl(value) })));
          }}
        />
      </Field>
      <Field id="endpoint-description" label="Description" optional error={errors.description}>
        <textarea
          ref={descInput}
          id="endpoint-description"
          class="input"
          rows={2}
          maxLength={500}
          value={description}
          placeholder="What receives these events, e.g. Order service (production)"
          aria-invalid={errors.description ? true : undefined}
          aria-describedby={describedBy('endpoint-description', undefined, errors.description)}
          onInput={(e) => setDescription(e.currentTarget.value)}
        />
      </Field>
      {catalog.error && <ErrorAlert error={catalog.error} title="The event types could not be loaded" onRetry={catalog.reload} />}
      {!catalog.data && catalog.loading && <Loading label="Loading event types…" />}
      {catalog.data && (
        <EventTypePicker
          groupRef={typesGroup}
          catalog={catalog.data.data}
          selected={types}
          onChange={(next) => {
            setTypes(next);
            if (next.length && errors.event_types) setErrors({ ...errors, event_types: undefined });
          }}
          error={errors.event_types}
        />
      )}
      <Field id="endpoint-rate-limit" label="Rate limit" optional hint={rateHint} error={errors.rate_limit}>
        <span class="input-with-unit">
          <input
            ref={rateInput}
            id="endpoint-rate-limit"
            class="input input-short"
            type="text"
            inputMode="numeric"
            autoComplete="off"
            placeholder="No limit"
            value={rateLimit}
            aria-invalid={errors.rate_limit ? true : undefined}
            aria-describedby={['endpoint-rate-limit-unit', describedBy('endpoint-rate-limit', rateHint, errors.rate_limit)].filter(Boolean).join(' ')}
            onInput={(e) => {
              setRateLimit(e.currentTarget.value);
              // Clear a stale message as soon as the value becomes acceptable.
              if (errors.rate_limit && !('error' in parseRateLimit(e.currentTarget.value))) setErrors({ ...errors, rate_limit: undefined });
            }}
            data-testid="rate-limit"
          />
          <span id="endpoint-rate-limit-unit" class="muted">
            requests per second
          </span>
        </span>
      </Field>
      <fieldset class="field fieldset" data-testid="scheme-picker">
        <legend class="label">Signature scheme</legend>
        <label class="choice">
          <input type="radio" name="signature-scheme" checked={scheme === 'herald'} onChange={() => setScheme('herald')} data-testid="scheme-herald" />
          <span>
            <strong>Herald</strong> <span class="hint">X-Service-Timestamp and X-Service-Signature; verify with @herald/verify.</span>
          </span>
        </label>
        <label class="choice">
          <input
            type="radio"
            name="signature-scheme"
            checked={scheme === 'standard-webhooks'}
            onChange={() => setScheme('standard-webhooks')}
            data-testid="scheme-standard-webhooks"
          />
          <span>
            <strong>Standard Webhooks</strong>{' '}
            <span class="hint">webhook-id, webhook-timestamp and webhook-signature, for receivers that use a Standard Webhooks library.</span>
          </span>
        </label>
        {/* Only when editing (a new endpoint's initial values name no scheme): a change replaces the secret. */}
        {initial.signature_scheme !== undefined && scheme !== initial.signature_scheme && (
          <p class="hint" role="status" data-testid="scheme-change-note">
            Changing the scheme replaces the signing secret: the new secret is shown once after you save, and the current one stops working at
            once. Update your receiver right after.
          </p>
        )}
      </fieldset>
      <HeadersEditor rows={headers} onChange={setHeaders} error={errors.headers} />
      <MetadataEditor rows={metadata} onChange={setMetadata} error={errors.metadata} />
      <div class="form-actions">
        <Link href={cancelHref} class="btn btn-secondary">
          Cancel
        </Link>
        <Button type="submit" variant="primary" busy={busy} data-testid="submit-endpoint">
          {submitLabel}
        </Button>
      </div>
    </form>
  );
}
