import { useEffect, useState } from 'preact/hooks';
import type { ApiError } from '../../api/client.ts';
import { cancelReplay, listReplays, type Replay } from '../../api/events.ts';
import { listEndpoints } from '../../api/herald.ts';
import { Alert, ErrorAlert } from '../../components/alert.tsx';
import { Badge, type Tone } from '../../components/badge.tsx';
import { Button } from '../../components/button.tsx';
import { EmptyState } from '../../components/empty-state.tsx';
import { Link } from '../../components/link.tsx';
import { Loading } from '../../components/loading.tsx';
import { PageHeader } from '../../components/page-header.tsx';
import { TimeAgo } from '../../components/time-ago.tsx';
import { paths } from '../../lib/router.ts';
import { shortId } from '../../lib/short-id.ts';
import { formatExact } from '../../lib/time.ts';
import { asApiError, useResource } from '../../lib/use-resource.ts';
import './events.css';

/** How often the list is read again while a replay runs. */
const POLL_MS = 1_500;

const STATE: Record<Replay['state'], { tone: Tone; label: string }> = {
  running: { tone: 'info', label: 'Running' },
  completed: { tone: 'success', label: 'Completed' },
  canceled: { tone: 'neutral', label: 'Canceled' },
};

function selectionText(r: Replay): string {
  const f = r.filter;
  if (f.ids) return f.ids.length === 1 ? `event ${shortId(f.ids[0]!)}` : `${f.ids.length} chosen events`;
  const parts = [
    f.types ? f.types.join(', ') : 'all types',
    f.states ? `state ${f.states.join(' or ')}` : '',
    f.since ? `from ${formatExact(f.since)}` : '',
    f.until ? `before ${formatExact(f.until)}` : '',
  ].filter(Boolean);
  return parts.join(', ');
}

/** Replays: who replayed what and when, with the progress of those still running. */
export function ReplayList({ created }: { created?: string }) {
  const replays = useResource((signal) => listReplays(signal), 'replays');
  const endpoints = useResource((signal) => listEndpoints(signal), 'endpoints');
  const [canceling, setCanceling] = useState<string>();
  const [error, setError] = useState<ApiError>();
  const running = replays.data?.data.some((r) => r.state === 'running') ?? false;

  useEffect(() => {
    if (!running) return;
    const timer = setTimeout(() => void replays.reload(), POLL_MS);
    return () => clearTimeout(timer);
  }, [replays.data]);

  const urlOf = (id: string) => endpoints.data?.find((e) => e.id === id)?.url ?? `endpoint ${shortId(id)}`;

  async function cancel(id: string) {
    setCanceling(id);
    setError(undefined);
    try {
      await cancelReplay(id);
      await replays.reload();
    } catch (err) {
      setError(asApiError(err));
    } finally {
      setCanceling(undefined);
    }
  }

  const rows = replays.data?.data;
  return (
    <>
      <PageHeader
        title="Replays"
        docTitle="Replays"
        before={
          <nav aria-label="Breadcrumb" class="breadcrumb">
            <ol>
              <li>
                <Link href={paths.events}>Events</Link>
              </li>
              <li aria-current="page">Replays</li>
            </ol>
          </nav>
        }
      >
        Every replay of this account: who started it, when, what it selected and how far it got.
      </PageHeader>
      {created && rows?.some((r) => r.id === created) && (
        <Alert tone="success" testId="replay-started" live>
          <p>The replay has started. Herald sends it in the background; this page shows its progress.</p>
        </Alert>
      )}
      {error && <ErrorAlert error={error} title="The replay could not be canceled" />}
      {replays.error && <ErrorAlert error={replays.error} title="The replays could not be loaded" onRetry={() => void replays.reload()} />}
      {!rows && replays.loading && <Loading label="Loading replays…" />}
      {rows?.length === 0 && (
        <EmptyState title="No replays yet" testId="replays-empty">
          Select events on the Events page and choose Replay to send them again.
        </EmptyState>
      )}
      {rows && rows.length > 0 && (
        <div class="card card-flush">
          <table class="table table-replays" data-testid="replay-table">
            <caption class="visually-hidden">Replays, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Started</th>
                <th scope="col">By</th>
                <th scope="col">Selection</th>
                <th scope="col">To</th>
                <th scope="col">Progress</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <tr key={r.id} data-testid="replay-row" data-replay-id={r.id} class={r.id === created ? 'row-new' : undefined}>
                  <td data-label="Started">
                    <TimeAgo iso={r.created_at} exact />
                  </td>
                  <td data-label="By" data-testid="replay-by">
                    {r.created_by.type === 'api_key' ? 'API key ' : ''}
                    {r.created_by.name ?? '(deleted)'}
                  </td>
                  <td data-label="Selection">{selectionText(r)}</td>
                  <td data-label="To" class="break">
                    {r.endpoint_id ? urlOf(r.endpoint_id) : 'Every subscribed endpoint'}
                  </td>
                  <td data-label="Progress" data-testid="replay-progress">
                    <Badge tone={STATE[r.state].tone} testId="replay-state">
                      {STATE[r.state].label}
                    </Badge>{' '}
                    <progress max={Math.max(1, r.total)} value={Math.min(r.done, r.total)} aria-label={`${r.done} of ${r.total} events`} />
                    <span class="small block" data-testid="replay-done">
                      {r.done.toLocaleString()} of {r.total.toLocaleString()} events · {r.deliveries.toLocaleString()}{' '}
                      {r.deliveries === 1 ? 'delivery' : 'deliveries'}
                      {r.skipped.disabled > 0 && ` · ${r.skipped.disabled.toLocaleString()} to disabled endpoints skipped`}
                      {r.skipped.unsubscribed > 0 && ` · ${r.skipped.unsubscribed.toLocaleString()} not subscribed`}
                    </span>
                  </td>
                  <td class="row-toggle">
                    {r.state === 'running' && (
                      <Button small variant="danger" busy={canceling === r.id} onClick={() => void cancel(r.id)} data-testid="cancel-replay">
                        Cancel
                      </Button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}
