import { useState } from 'preact/hooks';
import { getAttempt } from '../../api/herald.ts';
import type { Attempt } from '../../api/types.ts';
import { ErrorAlert } from '../../components/alert.tsx';
import { Badge, OutcomeBadge } from '../../components/badge.tsx';
import { Loading } from '../../components/loading.tsx';
import { ShortId } from '../../components/short-id.tsx';
import { TimeAgo } from '../../components/time-ago.tsx';
import { shortId } from '../../lib/short-id.ts';
import { formatDuration } from '../../lib/time.ts';
import { useResource } from '../../lib/use-resource.ts';
import { AttemptDetailView } from './attempt-detail-view.tsx';

/** One attempt as a row; its own <tbody> so the expanded detail stays with it. */
export function AttemptRow({ endpointId, attempt: a }: { endpointId: string; attempt: Attempt }) {
  const [open, setOpen] = useState(false);
  const detailId = `attempt-${a.id}`;
  return (
    <tbody class={open ? 'is-open' : undefined} data-testid="attempt-row" data-attempt-id={a.id}>
      <tr>
        <td data-label="Time">
          <TimeAgo iso={a.started_at} exact />
        </td>
        <td data-label="Event">
          <span class="mono">{a.event_type}</span>
          {a.is_test && (
            <>
              {' '}
              <Badge tone="info" testId="test-marker">
                Test
              </Badge>
            </>
          )}
          <ShortId id={a.event_id} what="event id" />
        </td>
        <td data-label="Response">
          <OutcomeBadge outcome={a.outcome} statusCode={a.status_code} deliveryState={a.delivery_state} />
          {a.error && <span class="attempt-error">{a.error}</span>}
        </td>
        <td data-label="Duration" class="num">
          {formatDuration(a.duration_ms)}
        </td>
        <td class="row-toggle">
          <button type="button" class="btn btn-ghost btn-small" aria-expanded={open} aria-controls={detailId} onClick={() => setOpen(!open)}>
            {open ? 'Hide' : 'Details'}
            <span class="visually-hidden"> of the attempt of {new Date(a.started_at).toLocaleString()}</span>
          </button>
        </td>
      </tr>
      {open && (
        <tr class="detail-row">
          <td colSpan={5} id={detailId}>
            <AttemptDetailLoader endpointId={endpointId} attemptId={a.id} />
          </td>
        </tr>
      )}
    </tbody>
  );
}

function AttemptDetailLoader({ endpointId, attemptId }: { endpointId: string; attemptId: string }) {
  const detail = useResource((signal) => getAttempt(endpointId, attemptId, signal), attemptId);
  if (detail.data) return <AttemptDetailView attempt={detail.data} />;
  if (detail.error) return <ErrorAlert error={detail.error} title="The attempt could not be loaded" onRetry={detail.reload} />;
  return <Loading label="Loading the request and response…" />;
}
