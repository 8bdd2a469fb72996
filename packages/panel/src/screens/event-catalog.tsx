import { useState } from 'preact/hooks';
import { listAllEventTypes } from '../api/herald.ts';
import type { EventType } from '../api/types.ts';
import { ErrorAlert } from '../components/alert.tsx';
import { Badge } from '../components/badge.tsx';
import { CopyButton } from '../components/copy-button.tsx';
import { EmptyState } from '../components/empty-state.tsx';
import { Loading } from '../components/loading.tsx';
import { PageHeader } from '../components/page-header.tsx';
import { useResource } from '../lib/use-resource.ts';

/** Settings → Event catalog: every type an endpoint can subscribe to, with its schema and an example. */
export function EventCatalog() {
  const types = useResource((signal) => listAllEventTypes(signal), 'event-types');
  const [filter, setFilter] = useState('');
  const words = filter.trim().toLowerCase();
  const shown = types.data?.filter((t) => !words || t.name.toLowerCase().includes(words) || t.description.toLowerCase().includes(words));

  return (
    <>
      <PageHeader title="Event catalog" docTitle="Event catalog">
        The event types your endpoints can subscribe to. Each event's <code>data</code> follows the type's JSON Schema; the example is what
        a test event of that type sends.
      </PageHeader>
      {types.error && <ErrorAlert error={types.error} title="The event catalog could not be loaded" onRetry={types.reload} />}
      {!types.data && types.loading && <Loading label="Loading the event catalog…" />}
      {types.data && types.data.length > 0 && (
        <div class="catalog-tools">
          <label for="catalog-filter" class="label">
            Filter
          </label>
          <input
            id="catalog-filter"
            class="input"
            type="search"
            value={filter}
            placeholder="alarm, created…"
            onInput={(e) => setFilter(e.currentTarget.value)}
            data-testid="catalog-filter"
          />
          <span class="muted small" role="status" aria-live="polite">
            {shown!.length === types.data.length ? `${types.data.length} types` : `${shown!.length} of ${types.data.length} types`}
          </span>
        </div>
      )}
      {types.data?.length === 0 && (
        <EmptyState title="No event types yet" testId="catalog-empty">
          Your operator adds event types with <code>herald event-types</code>; endpoints subscribe to them by name.
        </EmptyState>
      )}
      {shown && shown.length === 0 && types.data!.length > 0 && (
        <EmptyState title="No type matches" testId="catalog-no-match">
          No event type's name or description contains "{filter.trim()}".
        </EmptyState>
      )}
      {shown?.map((t) => <EventTypeCard key={t.name} type={t} />)}
    </>
  );
}

const pretty = (value: unknown) => JSON.stringify(value, null, 2);

function EventTypeCard({ type: t }: { type: EventType }) {
  const id = `type-${t.name.replace(/[^A-Za-z0-9_-]/g, '-')}`;
  return (
    <section class="card event-type" aria-labelledby={id} data-testid="event-type" data-type={t.name}>
      <div class="event-type-head">
        <h2 id={id} class="card-title mono">
          {t.name}
        </h2>
        {t.builtin && <Badge tone="info">Built in</Badge>}
      </div>
      {t.description ? <p>{t.description}</p> : <p class="muted">No description.</p>}
      <JsonBlock label="Example" value={t.example} testId="event-type-example" />
      <JsonBlock label="Schema" value={t.schema} testId="event-type-schema" />
    </section>
  );
}

/** A JSON document behind a disclosure, with a copy button. */
function JsonBlock({ label, value, testId }: { label: string; value: unknown; testId: string }) {
  const text = pretty(value);
  return (
    <details class="json-block" data-testid={testId}>
      <summary>{label}</summary>
      <div class="json-block-tools">
        <CopyButton text={text} label={`Copy ${label.toLowerCase()}`} />
      </div>
      <pre class="code" tabIndex={0} aria-label={label}>
        {text}
      </pre>
    </details>
  );
}
