import { useEffect, useState } from 'preact/hooks';
import { listEndpoints } from '../api/herald.ts';
import type { Endpoint } from '../api/types.ts';
import { Alert, ErrorAlert } from '../components/alert.tsx';
import { OutcomeBadge, StateBadge } from '../components/badge.tsx';
import { EmptyState } from '../components/empty-state.tsx';
import { EventTypeChips } from '../components/event-type-chips.tsx';
import { Link } from '../components/link.tsx';
import { Loading } from '../components/loading.tsx';
import { PageHeader } from '../components/page-header.tsx';
import { TimeAgo } from '../components/time-ago.tsx';
import { paths } from '../lib/router.ts';
import { useResource } from '../lib/use-resource.ts';
import { FailureStreak } from './endpoint/failure-streak.tsx';

/** Settings → Webhooks: every endpoint of the account at a glance. */
export function EndpointList({ notice }: { notice?: string }) {
  const [typed, setTyped] = useState('');
  const search = useDebounced(typed.trim(), 250);
  const endpoints = useResource((signal) => listEndpoints(signal, search), `endpoints:${search}`);
  const searching = search !== '';
  const addButton = (
    <Link href={paths.newEndpoint} class="btn btn-primary" data-testid="add-endpoint" data-changes>
      <span aria-hidden="true">+ </span>Add endpoint
    </Link>
  );

  return (
    <>
      <PageHeader title="Webhooks" docTitle="Webhooks" actions={endpoints.data?.length || searching ? addButton : undefined}>
        Herald sends a signed HTTPS <code>POST</code> to each endpoint when an event it subscribed to happens, and retries when it fails.
      </PageHeader>
      {notice && (
        <Alert tone="success" live>
          {notice}
        </Alert>
      )}
      {endpoints.error && <ErrorAlert error={endpoints.error} title="The endpoints could not be loaded" onRetry={endpoints.reload} />}
      {!endpoints.data && endpoints.loading && <Loading label="Loading endpoints…" />}
      {/* Kept on screen while a search loads, so it keeps the focus; gone only when the account has no endpoint at all. */}
      {!(typed === '' && !searching && endpoints.data?.length === 0) && (
        <div class="list-search">
          <label for="endpoint-search" class="visually-hidden">
            Search endpoints
          </label>
          <input
            id="endpoint-search"
            class="input"
            type="search"
            placeholder="Search by URL or description"
            autoComplete="off"
            value={typed}
            onInput={(e) => setTyped(e.currentTarget.value)}
            data-testid="endpoint-search"
          />
        </div>
      )}
      {searching && endpoints.data?.length === 0 && (
        <EmptyState title="No endpoints match" testId="endpoints-no-match">
          No endpoint&rsquo;s URL or description contains &ldquo;{search}&rdquo;.
        </EmptyState>
      )}
      {!searching && endpoints.data?.length === 0 && (
        <EmptyState title="No endpoints yet" action={addButton} testId="endpoints-empty">
          Add the HTTPS address of your receiver and choose the events it should get. Herald shows you its signing secret once, then you can
          send a test event right away.
        </EmptyState>
      )}
      {endpoints.data && endpoints.data.length > 0 && <EndpointTable endpoints={endpoints.data} />}
    </>
  );
}

/** `value`, once it has stayed the same for `ms`: a search runs when the typing pauses, not at every key. */
function useDebounced(value: string, ms: number): string {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const timer = setTimeout(() => setSettled(value), ms);
    return () => clearTimeout(timer);
  }, [value, ms]);
  return settled;
}

function EndpointTable({ endpoints }: { endpoints: Endpoint[] }) {
  return (
    <div class="card card-flush">
      <table class="table table-endpoints" data-testid="endpoint-table">
        <caption class="visually-hidden">Endpoints</caption>
        <colgroup>
          <col class="col-endpoint" />
          <col class="col-events" />
          <col class="col-status" />
          <col class="col-failures" />
          <col class="col-last" />
        </colgroup>
        <thead>
          <tr>
            <th scope="col">Endpoint</th>
            <th scope="col">Events</th>
            <th scope="col">Status</th>
            <th scope="col">Failures</th>
            <th scope="col">Last attempt</th>
          </tr>
        </thead>
        <tbody>
          {endpoints.map((e) => (
            <tr key={e.id} data-testid="endpoint-row" class={e.state === 'disabled' ? 'row-disabled' : undefined}>
              <th scope="row" data-label="Endpoint">
                <Link href={paths.endpoint(e.id)} class="endpoint-url mono">
                  {e.url}
                </Link>
                {e.description && <span class="muted endpoint-desc">{e.description}</span>}
              </th>
              <td data-label="Events">
                <EventTypeChips types={e.event_types} />
              </td>
              <td data-label="Status">
                <StateBadge endpoint={e} />
                {e.state === 'disabled' && e.disabled_at && (
                  <span class="muted small">
                    {' '}
                    since <TimeAgo iso={e.disabled_at} />
                  </span>
                )}
              </td>
              <td data-label="Failures">
                <FailureStreak endpoint={e} />
              </td>
              <td data-label="Last attempt">
                {e.last_attempt ? (
                  <span class="last-attempt">
                    <OutcomeBadge outcome={e.last_attempt.outcome} statusCode={e.last_attempt.status_code} deliveryState={e.last_attempt.delivery_state} />
                    <TimeAgo iso={e.last_attempt.started_at} />
                  </span>
                ) : (
                  <span class="muted">No attempts yet</span>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
