import { Button } from '../../components/button.tsx';

export interface MetadataRow {
  key: string;
  value: string;
}

export const metadataRows = (metadata: Record<string, string> = {}): MetadataRow[] => Object.entries(metadata).map(([key, value]) => ({ key, value }));

/** The rows as the API takes them, blank rows left out. */
export function metadataInput(rows: MetadataRow[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const r of rows) if (r.key.trim() || r.value) out[r.key.trim()] = r.value;
  return out;
}

/** Metadata: the owner's own labels, a key and a value per row. */
export function MetadataEditor({ rows, onChange, error }: { rows: MetadataRow[]; onChange(rows: MetadataRow[]): void; error?: string }) {
  const set = (i: number, patch: Partial<MetadataRow>) => onChange(rows.map((r, j) => (j === i ? { ...r, ...patch } : r)));
  return (
    <fieldset class={`fieldset field${error ? ' has-error' : ''}`} aria-describedby={`endpoint-metadata-hint${error ? ' endpoint-metadata-error' : ''}`}>
      <legend class="label">
        Metadata<span class="optional"> (optional)</span>
      </legend>
      <p id="endpoint-metadata-hint" class="hint">
        Your own labels, such as a team or a customer id: up to 50 keys of at most 40 characters, values of at most 500. Herald does not send them; the
        API can list endpoints by them.
      </p>
      {rows.length > 0 && (
        <ul class="pair-list" data-testid="metadata-rows">
          {rows.map((r, i) => (
            <li key={i} class="pair-row pair-row-2">
              <input
                class="input mono"
                aria-label={`Metadata ${i + 1} key`}
                placeholder="team"
                autoComplete="off"
                value={r.key}
                onInput={(e) => set(i, { key: e.currentTarget.value })}
                data-testid="metadata-key"
              />
              <input
                class="input"
                aria-label={`Metadata ${i + 1} value`}
                placeholder="billing"
                autoComplete="off"
                value={r.value}
                onInput={(e) => set(i, { value: e.currentTarget.value })}
                data-testid="metadata-value"
              />
              <Button small variant="ghost" onClick={() => onChange(rows.filter((_, j) => j !== i))} aria-label={`Remove metadata ${i + 1}`}>
                Remove
              </Button>
            </li>
          ))}
        </ul>
      )}
      <div>
        <Button small variant="secondary" onClick={() => onChange([...rows, { key: '', value: '' }])} data-testid="add-metadata">
          Add metadata
        </Button>
      </div>
      {error && (
        <p id="endpoint-metadata-error" class="field-error" data-testid="endpoint-metadata-error">
          {error}
        </p>
      )}
    </fieldset>
  );
}
