import { useEffect, useMemo, useState } from 'preact/hooks';
import { countEvents, searchEvents, type DeliveryState, type EventSearch, type HeraldEvent, type ReplaySelection, selectionOf } from '../../api/events.ts';
import { listEndpoints, listEventTypes } from '../../api/herald.ts';
import { ErrorAlert } from '../../components/alert.tsx';
import { Button } from '../../components/button.tsx';
import { EmptyState } from '../../components/empty-state.tsx';
import { Field } from '../../components/field.tsx';
import { Link } from '../../components/link.tsx';
import { Loading } from '../../components/loading.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { TimeAgo } from '../../components/time-ago.tsx';
import { navigate, paths } from '../../lib/router.ts';
import { useSession } from '../../lib/session.ts';
import { shortId } from '../../lib/short-id.ts';
import { fromLocalInput, toLocalInput } from '../../lib/time.ts';
import { asApiError, useResource } from '../../lib/use-resource.ts';
import type { ApiError } from '../../api/client.ts';
import { ReplayDialog } from './replay-dialog.tsx';
import './events.css';

const STATES: Array<{ value: DeliveryState; label: string }> = [
  { value: 'failed', label: 'Failed' },
  { value: 'skipped', label: 'Skipped (endpoint disabled)' },
  { value: 'pending', label: 'Pending' },
  { value: 'succeeded', label: 'Succeeded' },
];

const SEARCH_KEYS = ['id', 'type', 'since', 'until', 'endpoint_id', 'state'] as const;

export function searchOf(params: URLSearchParams): EventSearch {
  const s: EventSearch = {};
  for (const k of SEARCH_KEYS) {
    const v = params.get(k);
    if (v) (s as Record<string, string>)[k] = v;
  }
  return s;
}

function hrefOf(s: EventSearch): string {
  const q = new URLSearchParams();
  for (const k of SEARCH_KEYS) if (s[k]) q.set(k, s[k]!);
  const qs = q.toString();
  return qs ? `${paths.events}?${qs}` : paths.events;
}

export function countText(c: { count: number; capped: boolean }): string {
  if (c.capped) return `More than ${c.count.toLocaleString()} events match`;
  return `${c.count.toLocaleString()} ${c.count === 1 ? 'event matches' : 'events match'}`;
}

/** Events: search by id, type, time, endpoint and delivery state; count; select and replay. */
export function EventList({ search: params }: { search: URLSearchParams }) {
  const search = useMemo(() => searchOf(params), [params.toString()]);
  const key = hrefOf(search);
  const endpoints = useResource((signal) => listEndpoints(signal), 'endpoints');
  const types = useResource((signal) => listEventTypes(signal), 'types');
  const first = useResource(async (signal) => {
    const [page, count] = await Promise.all([searchEvents(search, null, signal), countEvents(search, signal)]);
    return { page, count };
  }, key);
  const [more, setMore] = useState<{ rows: HeraldEvent[]; cursor: string | null } | undefined>();
  const [loadingMore, setLoadingMore] = useState(false);
  const [moreError, setMoreError] = useState<ApiError>();
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [allMatching, setAllMatching] = useState(false);
  const [replaying, setReplaying] = useState<ReplaySelection>();
  // An embedded panel (portal session) can search and resend, not replay in bulk: the API keeps replays to the account's own users and keys.
  const canReplay = !useSession().portal;

  useEffect(() => {
    setMore(undefined);
    setSelected(new Set());
    setAllMatching(false);
    setMoreError(undefined);
  }, [key]);

  const rows = first.data ? [...first.data.page.data, ...(more?.rows ?? [])] : undefined;
  const cursor = more ? more.cursor : first.data?.page.next_cursor ?? null;
  const count = first.data?.count;

  async function loadMore() {
    if (!cursor) return;
    setLoadingMore(true);
    setMoreError(undefined);
    try {
      const page = await searchEvents(search, cursor);
      setMore({ rows: [...(more?.rows ?? []), ...page.data], cursor: page.next_cursor });
    } catch (err) {
      setMoreError(asApiError(err));
    } finally {
      setLoadingMore(false);
    }
  }

  const allShownSelected = !!rows && rows.length > 0 && rows.every((r) => selected.has(r.id));
  const toggle = (id: string) => {
    const next = new Set(selected);
    if (next.has(id)) next.delete(id);
    else next.add(id);
    setSelected(next);
    setAllMatching(false);
  };
  const toggleAll = () => {
    setSelected(allShownSelected ? new Set() : new Set(rows!.map((r) => r.id)));
    setAllMatching(false);
  };
  const selectedCount = allMatching && count ? count.count : selected.size;

  return (
    <>
      <PageHeader
        title="Events"
        docTitle="Events"
        actions={
          canReplay && (
            <Link href={paths.replays} class="btn btn-secondary" data-testid="replays-link">
              Replays
            </Link>
          )
        }
      >
        What your systems published, and what became of each delivery. Find events, see their attempts, and send them again.
      </PageHeader>
      <SearchForm
        key={key}
        search={search}
        endpoints={endpoints.data ?? []}
        types={types.data?.data.map((t) => t.name) ?? []}
        onSearch={(s) => navigate(hrefOf(s))}
      />
      <section class="card card-flush" aria-labelledby="results-title">
        <div class="card-head">
          <h2 id="results-title" class="card-title" role="status" aria-live="polite" data-testid="event-count">
            {count ? countText(count) : 'Counting…'}
          </h2>
          <div class="card-tools">
            {canReplay && rows && rows.length > 0 && (
              <Button
                variant="primary"
                small
                data-testid="replay-selected"
                disabled={selectedCount === 0}
                onClick={() => setReplaying(allMatching ? selectionOf(search) : { kind: 'ids', ids: [...selected] })}
              >
                {selectedCount === 0 ? 'Replay…' : `Replay ${allMatching && count?.capped ? 'more than ' : ''}${selectedCount.toLocaleString()} …`}
              </Button>
            )}
          </div>
        </div>
        {allShownSelected && count && count.count > rows!.length && (
          <p class="select-all-note" data-testid="select-all-note">
            {allMatching ? (
              <>
                All {count.capped ? 'more than ' : ''}
                {count.count.toLocaleString()} matching events are selected.{' '}
                <button type="button" class="link-button" onClick={() => setAllMatching(false)}>
                  Select only the {rows!.length} shown
                </button>
              </>
            ) : (
              <>
                The {rows!.length} events shown are selected.{' '}
                <button type="button" class="link-button" data-testid="select-all-matching" onClick={() => setAllMatching(true)}>
                  Select all {count.capped ? 'more than ' : ''}
                  {count.count.toLocaleString()} matching
                </button>
              </>
            )}
          </p>
        )}
        {first.error && <ErrorAlert error={first.error} title="The events could not be loaded" onRetry={() => void first.reload()} />}
        {!rows && first.loading && <Loading label="Searching events…" />}
        {rows?.length === 0 && (
          <EmptyState title="No events match" testId="events-empty">
            Change the search, or widen the time range.
          </EmptyState>
        )}
        {rows && rows.length > 0 && (
          <table class="table table-events" data-testid="event-table">
            <caption class="visually-hidden">Events, newest first</caption>
            <thead>
              <tr>
                <th scope="col" class="col-select">
                  <input type="checkbox" aria-label="Select every event shown" checked={allShownSelected} onChange={toggleAll} data-testid="select-shown" />
                </th>
                <th scope="col">Event</th>
                <th scope="col">Id</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((e) => (
                <tr key={e.id} data-testid="event-row" data-event-id={e.id}>
                  <td class="col-select">
                    <input type="checkbox" aria-label={`Select event ${e.id}`} checked={allMatching || selected.has(e.id)} onChange={() => toggle(e.id)} data-testid="select-event" />
                  </td>
                  <th scope="row" data-label="Event">
                    <Link href={paths.event(e.id)} class="mono">
                      {e.type}
                    </Link>
                  </th>
                  <td data-label="Id">
                    <span class="mono" title={e.id} data-testid="event-short-id">
                      {shortId(e.id)}
                    </span>
                  </td>
                  <td data-label="Created">
                    <TimeAgo iso={e.created_at} exact />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        {moreError && <ErrorAlert error={moreError} title="More events could not be loaded" />}
        {cursor && (
          <p class="load-more">
            <Button onClick={loadMore} busy={loadingMore} data-testid="load-more">
              Show more
            </Button>
          </p>
        )}
      </section>
      <ReplayDialog
        open={!!replaying}
        selection={replaying}
        endpoints={endpoints.data ?? []}
        onClose={() => setReplaying(undefined)}
        onCreated={(replay) => navigate(`${paths.replays}?created=${encodeURIComponent(replay.id)}`)}
      />
    </>
  );
}

function SearchForm({
  search,
  endpoints,
  types,
  onSearch,
}: {
  search: EventSearch;
  endpoints: Array<{ id: string; url: string }>;
  types: string[];
  onSearch(s: EventSearch): void;
}) {
  const [id, setId] = useState(search.id ?? '');
  const [type, setType] = useState(search.type ?? '');
  const [endpoint, setEndpoint] = useState(search.endpoint_id ?? '');
  const [state, setState] = useState(search.state ?? '');
  const [since, setSince] = useState(search.since ? toLocalInput(new Date(search.since)) : '');
  const [until, setUntil] = useState(search.until ? toLocalInput(new Date(search.until)) : '');
  const idError = id.trim() && !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id.trim()) ? 'Paste a whole event id.' : undefined;
  const sinceIso = fromLocalInput(since);
  const untilIso = fromLocalInput(until);
  const rangeError = sinceIso && untilIso && sinceIso >= untilIso ? 'The end must be after the start.' : undefined;

  return (
    <form
      class="card event-search"
      role="search"
      aria-label="Search events"
      data-testid="event-search"
      onSubmit={(ev) => {
        ev.preventDefault();
        if (idError || rangeError) return;
        onSearch({
          ...(id.trim() ? { id: id.trim().toLowerCase() } : {}),
          ...(type ? { type } : {}),
          ...(endpoint ? { endpoint_id: endpoint } : {}),
          ...(state ? { state: state as DeliveryState } : {}),
          ...(sinceIso ? { since: sinceIso } : {}),
          ...(untilIso ? { until: untilIso } : {}),
        });
      }}
    >
      <div class="event-search-grid">
        <Field id="search-id" label="Event id" error={idError} optional>
          <input id="search-id" class="input mono" value={id} onInput={(e) => setId(e.currentTarget.value)} placeholder="0196…" data-testid="search-id" />
        </Field>
        <Field id="search-type" label="Type">
          <select id="search-type" class="input" value={type} onChange={(e) => setType(e.currentTarget.value)} data-testid="search-type">
            <option value="">Any type</option>
            {types.map((t) => (
              <option key={t} value={t}>
                {t}
              </option>
            ))}
          </select>
        </Field>
        <Field id="search-endpoint" label="Endpoint">
          <select id="search-endpoint" class="input" value={endpoint} onChange={(e) => setEndpoint(e.currentTarget.value)} data-testid="search-endpoint">
            <option value="">Any endpoint</option>
            {endpoints.map((e) => (
              <option key={e.id} value={e.id}>
                {e.url}
              </option>
            ))}
          </select>
        </Field>
        <Field id="search-state" label="Delivery state" hint="Of the newest delivery to the endpoint (or to any endpoint).">
          <select id="search-state" class="input" value={state} onChange={(e) => setState(e.currentTarget.value)} data-testid="search-state">
            <option value="">Any state</option>
            {STATES.map((s) => (
              <option key={s.value} value={s.value}>
                {s.label}
              </option>
            ))}
          </select>
        </Field>
        <Field id="search-since" label="Created from" optional>
          <input id="search-since" class="input" type="datetime-local" value={since} onInput={(e) => setSince(e.currentTarget.value)} data-testid="search-since" />
        </Field>
        <Field id="search-until" label="Created before" error={rangeError} optional>
          <input id="search-until" class="input" type="datetime-local" value={until} onInput={(e) => setUntil(e.currentTarget.value)} data-testid="search-until" />
        </Field>
      </div>
      <div class="form-actions">
        <Button type="submit" variant="primary" data-testid="search-submit">
          Search
        </Button>
        <Link href={paths.events} class="btn btn-ghost" data-testid="search-clear">
          Clear
        </Link>
      </div>
    </form>
  );
}
