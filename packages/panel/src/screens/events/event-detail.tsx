import { useState } from 'preact/hooks';
import type { ApiError } from '../../api/client.ts';
import { getEvent, resendEvent, type Delivery, type DeliveryState, type EventDetail } from '../../api/events.ts';
import { listEndpoints } from '../../api/herald.ts';
import type { Attempt, Endpoint } from '../../api/types.ts';
import { Alert, ErrorAlert } from '../../components/alert.tsx';
import { Badge, OutcomeBadge, type Tone } from '../../components/badge.tsx';
import { Button } from '../../components/button.tsx';
import { Link } from '../../components/link.tsx';
import { Loading } from '../../components/loading.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { TimeAgo } from '../../components/time-ago.tsx';
import { paths } from '../../lib/router.ts';
import { shortId } from '../../lib/short-id.ts';
import { formatDuration } from '../../lib/time.ts';
import { asApiError, useResource } from '../../lib/use-resource.ts';
import './events.css';

const STATE: Record<DeliveryState, { tone: Tone; label: string }> = {
  pending: { tone: 'info', label: 'Pending' },
  succeeded: { tone: 'success', label: 'Succeeded' },
  failed: { tone: 'danger', label: 'Failed' },
  skipped: { tone: 'warning', label: 'Skipped' },
};

export function DeliveryStateBadge({ state }: { state: DeliveryState }) {
  return (
    <Badge tone={STATE[state].tone} testId="delivery-state">
      {STATE[state].label}
    </Badge>
  );
}

type Group = { endpointId: string; deliveries: Array<Delivery & { attempt_log: Attempt[] }> };

/** The deliveries of an event by endpoint, newest first within each (a replay or resend adds one). */
function groups(e: EventDetail): Group[] {
  const by = new Map<string, Group>();
  for (const d of e.deliveries) {
    const g = by.get(d.endpoint_id) ?? { endpointId: d.endpoint_id, deliveries: [] };
    g.deliveries.push(d);
    by.set(d.endpoint_id, g);
  }
  for (const g of by.values()) g.deliveries.sort((a, b) => (a.created_at < b.created_at ? 1 : a.created_at > b.created_at ? -1 : a.id < b.id ? 1 : -1));
  return [...by.values()];
}

/** One event: its payload, and its deliveries per endpoint with their attempts; resend to an endpoint. */
export function EventDetailScreen({ id }: { id: string }) {
  const event = useResource((signal) => getEvent(id, signal), id);
  const endpoints = useResource((signal) => listEndpoints(signal), 'endpoints');
  const [sending, setSending] = useState<string>();
  const [sent, setSent] = useState<string>();
  const [error, setError] = useState<ApiError>();
  const endpointOf = (eid: string): Endpoint | undefined => endpoints.data?.find((e) => e.id === eid);

  async function resend(endpointId: string) {
    setSending(endpointId);
    setSent(undefined);
    setError(undefined);
    try {
      await resendEvent(id, endpointId);
      await event.reload();
      setSent(endpointOf(endpointId)?.url ?? 'the endpoint');
    } catch (err) {
      setError(asApiError(err));
    } finally {
      setSending(undefined);
    }
  }

  const e = event.data;
  // Endpoints subscribed to the type that have no delivery of it (created later): they can be sent it too.
  const others = e && endpoints.data ? endpoints.data.filter((x) => x.event_types.includes(e.type) && !e.deliveries.some((d) => d.endpoint_id === x.id)) : [];

  return (
    <>
      <PageHeader
        title={e ? <span class="mono">{e.type}</span> : 'Event'}
        docTitle={e ? `Event ${shortId(e.id)}` : 'Event'}
        before={
          <nav aria-label="Breadcrumb" class="breadcrumb">
            <ol>
              <li>
                <Link href={paths.events}>Events</Link>
              </li>
              <li aria-current="page" class="mono">
                {shortId(id)}
              </li>
            </ol>
          </nav>
        }
      >
        {e && (
          <>
            <span class="mono" data-testid="event-id">
              {e.id}
            </span>{' '}
            · created <TimeAgo iso={e.created_at} />
          </>
        )}
      </PageHeader>
      {event.error && <ErrorAlert error={event.error} title="The event could not be loaded" onRetry={() => void event.reload()} />}
      {!e && event.loading && <Loading label="Loading the event…" />}
      {sent && (
        <Alert tone="success" testId="resend-done" live>
          <p>The event is queued to {sent} again, as a new round of attempts.</p>
        </Alert>
      )}
      {error && <ErrorAlert error={error} title="The event could not be sent again" />}
      {e && (
        <>
          <section class="card" aria-labelledby="payload-title">
            <h2 id="payload-title" class="card-title">
              Payload
            </h2>
            <pre class="code" data-testid="event-payload">
              {JSON.stringify(e.payload, null, 2)}
            </pre>
          </section>
          <section aria-labelledby="deliveries-title">
            <h2 id="deliveries-title" class="section-title">
              Deliveries
            </h2>
            {e.deliveries.length === 0 && <p class="muted">No endpoint subscribed to {e.type} when it was published.</p>}
            {groups(e).map((g) => {
              const endpoint = endpointOf(g.endpointId);
              return (
                <section class="card delivery-group" key={g.endpointId} data-testid="delivery-group" data-endpoint-id={g.endpointId}>
                  <div class="card-head">
                    <h3 class="card-title break">
                      {endpoint ? (
                        <Link href={paths.endpoint(endpoint.id)} class="mono">
                          {endpoint.url}
                        </Link>
                      ) : (
                        <span class="mono">endpoint {shortId(g.endpointId)}</span>
                      )}
                      {endpoint?.state === 'disabled' && (
                        <>
                          {' '}
                          <Badge tone="danger">Disabled</Badge>
                        </>
                      )}
                    </h3>
                    <div class="card-tools">
                      <Button
                        small
                        busy={sending === g.endpointId}
                        disabled={endpoint?.state === 'disabled'}
                        onClick={() => void resend(g.endpointId)}
                        data-testid="resend"
                        data-changes
                        aria-label={`Resend to ${endpoint?.url ?? 'this endpoint'}`}
                      >
                        Resend to endpoint
                      </Button>
                    </div>
                  </div>
                  {g.deliveries.map((d) => (
                    <DeliveryView key={d.id} delivery={d} />
                  ))}
                </section>
              );
            })}
            {others.length > 0 && (
              <section class="card" data-testid="not-delivered">
                <h3 class="card-title">Subscribed endpoints without a delivery</h3>
                <ul class="plain-list">
                  {others.map((x) => (
                    <li key={x.id}>
                      <span class="mono break">{x.url}</span>{' '}
                      <Button small busy={sending === x.id} disabled={x.state === 'disabled'} onClick={() => void resend(x.id)} data-testid="send-other" data-changes>
                        Send to endpoint
                      </Button>
                    </li>
                  ))}
                </ul>
              </section>
            )}
          </section>
        </>
      )}
    </>
  );
}

function DeliveryView({ delivery: d }: { delivery: Delivery & { attempt_log: Attempt[] } }) {
  return (
    <div class="delivery" data-testid="delivery" data-delivery-id={d.id}>
      <p class="delivery-line">
        <DeliveryStateBadge state={d.state} /> <span class="muted small">delivery</span>{' '}
        <span class="mono small" title={d.id}>
          {shortId(d.id)}
        </span>{' '}
        <span class="muted small">
          created <TimeAgo iso={d.created_at} />
          {d.state === 'pending' && d.next_attempt_at && (
            <>
              {' '}
              · next attempt <TimeAgo iso={d.next_attempt_at} />
            </>
          )}
          {d.last_error && ` · ${d.last_error}`}
        </span>
      </p>
      {d.attempt_log.length === 0 ? (
        <p class="muted small">No attempt yet.</p>
      ) : (
        <table class="table table-delivery-attempts" data-testid="delivery-attempts">
          <caption class="visually-hidden">Attempts of delivery {d.id}</caption>
          <thead>
            <tr>
              <th scope="col">#</th>
              <th scope="col">Attempt</th>
              <th scope="col">Time</th>
              <th scope="col">Response</th>
              <th scope="col" class="num">
                Duration
              </th>
            </tr>
          </thead>
          <tbody>
            {d.attempt_log.map((a) => (
              <tr key={a.id} data-testid="delivery-attempt">
                <td data-label="#">{a.attempt_number}</td>
                <td data-label="Attempt">
                  <span class="mono" title={a.id} data-testid="attempt-short-id">
                    {shortId(a.id)}
                  </span>
                </td>
                <td data-label="Time">
                  <TimeAgo iso={a.started_at} exact />
                </td>
                <td data-label="Response">
                  <OutcomeBadge outcome={a.outcome} statusCode={a.status_code} />
                  {a.error && <span class="attempt-error">{a.error}</span>}
                </td>
                <td data-label="Duration" class="num">
                  {formatDuration(a.duration_ms)}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}
