import type { EndpointHeader, EndpointHeaderInput } from '../../api/types.ts';
import { Button } from '../../components/button.tsx';

/** One row of the editor. `stored`: a secret value the endpoint already has, kept while the value box stays empty. */
export interface HeaderRow {
  name: string;
  value: string;
  secret: boolean;
  stored: boolean;
  hint: string | null;
}

export const headerRows = (headers: EndpointHeader[] = []): HeaderRow[] =>
  headers.map((h) => ({ name: h.name, value: h.value ?? '', secret: h.secret, stored: h.secret, hint: h.value_hint }));

/**
 * The rows as the API takes them, blank rows left out; `rowOf[i]` is the row
 * the i-th header came from, to place the server's `headers[i]` errors.
 */
export function headersInput(rows: HeaderRow[]): { headers: EndpointHeaderInput[]; rowOf: number[] } {
  const headers: EndpointHeaderInput[] = [];
  const rowOf: number[] = [];
  rows.forEach((r, i) => {
    if (!r.name.trim() && !r.value) return;
    const keep = r.secret && r.stored && r.value === '';
    headers.push(keep ? { name: r.name.trim(), secret: true } : { name: r.name.trim(), value: r.value, secret: r.secret });
    rowOf.push(i);
  });
  return { headers, rowOf };
}

/**
 * Custom headers: a name, a value and whether the value is secret, per row.
 * A secret value is never shown again; its box stays empty, and left empty
 * it keeps the value.
 */
export function HeadersEditor({ rows, onChange, error }: { rows: HeaderRow[]; onChange(rows: HeaderRow[]): void; error?: string }) {
  const set = (i: number, patch: Partial<HeaderRow>) => onChange(rows.map((r, j) => (j === i ? { ...r, ...patch } : r)));
  return (
    <fieldset class={`fieldset field${error ? ' has-error' : ''}`} aria-describedby={`endpoint-headers-hint${error ? ' endpoint-headers-error' : ''}`}>
      <legend class="label">
        Custom headers<span class="optional"> (optional)</span>
      </legend>
      <p id="endpoint-headers-hint" class="hint">
        Sent with every request to this endpoint, for example an API gateway&rsquo;s key. Herald&rsquo;s own headers (X-Service-&hellip;, Content-Type,
        User-Agent) and HTTP&rsquo;s connection headers (Host, Content-Length, Connection, Transfer-Encoding&hellip;) cannot be replaced. Mark a value
        secret to store it encrypted: it is never shown again.
      </p>
      {rows.length > 0 && (
        <ul class="pair-list" data-testid="header-rows">
          {rows.map((r, i) => (
            <li key={i} class="pair-row">
              <input
                class="input mono"
                aria-label={`Header ${i + 1} name`}
                placeholder="X-Api-Key"
                autoComplete="off"
                spellcheck={false}
                value={r.name}
                onInput={(e) => set(i, { name: e.currentTarget.value })}
                data-testid="header-name"
              />
              <input
                class="input mono"
                aria-label={`Header ${i + 1} value`}
                type={r.secret ? 'password' : 'text'}
                autoComplete="off"
                spellcheck={false}
                placeholder={r.stored && r.secret ? `Unchanged (${r.hint ?? '…'})` : 'Value'}
                value={r.value}
                onInput={(e) => set(i, { value: e.currentTarget.value })}
                data-testid="header-value"
              />
              <label class="check check-inline">
                <input type="checkbox" checked={r.secret} onChange={(e) => set(i, { secret: e.currentTarget.checked })} data-testid="header-secret" />
                Secret
              </label>
              <Button small variant="ghost" onClick={() => onChange(rows.filter((_, j) => j !== i))} aria-label={`Remove header ${i + 1}`}>
                Remove
              </Button>
            </li>
          ))}
        </ul>
      )}
      <div>
        <Button small variant="secondary" onClick={() => onChange([...rows, { name: '', value: '', secret: false, stored: false, hint: null }])} data-testid="add-header">
          Add header
        </Button>
      </div>
      {error && (
        <p id="endpoint-headers-error" class="field-error" data-testid="endpoint-headers-error">
          {error}
        </p>
      )}
    </fieldset>
  );
}
