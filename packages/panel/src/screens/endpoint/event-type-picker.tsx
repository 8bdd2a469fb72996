import type { RefObject } from 'preact';
import type { EventType } from '../../api/types.ts';

interface Props {
  catalog: EventType[];
  selected: string[];
  onChange(next: string[]): void;
  error?: string;
  /** The fieldset, so the form can move focus to it. */
  groupRef?: RefObject<HTMLFieldSetElement>;
}

/** A checkbox per catalog type, with its description, and "select all". */
export function EventTypePicker({ catalog, selected, onChange, error, groupRef }: Props) {
  const all = catalog.map((t) => t.name);
  // Types the endpoint has that the catalog no longer lists stay visible, so saving does not drop them silently.
  const unknown = selected.filter((s) => !all.includes(s));
  const everything = all.length > 0 && all.every((n) => selected.includes(n));
  const toggle = (name: string, on: boolean) => onChange(on ? [...selected, name] : selected.filter((s) => s !== name));

  return (
    <fieldset ref={groupRef} class={`field fieldset${error ? ' has-error' : ''}`} aria-describedby={error ? 'event-types-error' : undefined} data-testid="event-type-picker">
      <legend class="label">Events to send</legend>
      <p class="hint">The endpoint receives only the event types you choose. New types can be added later without breaking your receiver.</p>
      <label class="check check-all">
        <input type="checkbox" checked={everything} onChange={(e) => onChange(e.currentTarget.checked ? [...all, ...unknown] : [])} />
        <span>Select all</span>
      </label>
      <ul class="check-list">
        {catalog.map((t) => (
          <li key={t.name}>
            <label class="check">
              <input type="checkbox" name="event_types" value={t.name} checked={selected.includes(t.name)} onChange={(e) => toggle(t.name, e.currentTarget.checked)} />
              <span>
                <span class="mono check-name">{t.name}</span>
                {t.description && <span class="check-desc">{t.description}</span>}
              </span>
            </label>
          </li>
        ))}
        {unknown.map((name) => (
          <li key={name}>
            <label class="check">
              <input type="checkbox" name="event_types" value={name} checked onChange={(e) => toggle(name, e.currentTarget.checked)} />
              <span>
                <span class="mono check-name">{name}</span>
                <span class="check-desc">Not in the catalog any more.</span>
              </span>
            </label>
          </li>
        ))}
      </ul>
      {error && (
        <p id="event-types-error" class="field-error" data-testid="event-types-error">
          {error}
        </p>
      )}
    </fieldset>
  );
}
