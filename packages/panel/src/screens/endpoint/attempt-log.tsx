import { useState } from 'preact/hooks';
import { listAttempts } from '../../api/herald.ts';
import type { Attempt, Page } from '../../api/types.ts';
import { ErrorAlert } from '../../components/alert.tsx';
import { Button } from '../../components/button.tsx';
import { EmptyState } from '../../components/empty-state.tsx';
import { Loading } from '../../components/loading.tsx';
import { useResource, type Resource } from '../../lib/use-resource.ts';
import { AttemptRow } from './attempt-row.tsx';

interface Props {
  endpointId: string;
  /** Every attempt (the page loads them once for the log and the health chart). */
  all: Resource<Page<Attempt>>;
  /** Told when the user refreshes the log, so the page refreshes what goes with it (delivery health). */
  onRefresh?(): void;
}

/** The last 100 attempts, newest first, each one expandable; optionally only the failures. */
export function AttemptLog({ endpointId, all, onRefresh }: Props) {
  const [failuresOnly, setFailuresOnly] = useState(false);
  const failures = useResource(
    (signal) => (failuresOnly ? listAttempts(endpointId, { failuresOnly: true, signal }) : Promise.resolve(undefined)),
    `${endpointId}:${failuresOnly}`,
  );
  const shown = failuresOnly ? failures : all;
  const rows = shown.data?.data;
  const refresh = () => {
    onRefresh?.();
    return failuresOnly ? Promise.all([all.reload(), failures.reload()]) : all.reload();
  };

  return (
    <section class="card card-flush" aria-labelledby="log-heading" data-testid="attempt-log">
      <div class="card-head">
        <div>
          <h2 id="log-heading" class="card-title">
            Attempts
          </h2>
          <p class="muted small">The last 100 requests Herald sent to this endpoint, newest first. Times are in your time zone.</p>
        </div>
        <div class="card-tools">
          <label class="check check-inline">
            <input type="checkbox" checked={failuresOnly} onChange={(e) => setFailuresOnly(e.currentTarget.checked)} data-testid="failures-only" />
            <span>Failures only</span>
          </label>
          <Button small onClick={() => void refresh()} busy={shown.loading && !!rows} aria-label="Refresh the attempt log">
            Refresh
          </Button>
        </div>
      </div>
      {shown.error && <ErrorAlert error={shown.error} title="The attempt log could not be loaded" onRetry={() => void shown.reload()} />}
      {!rows && shown.loading && <Loading label="Loading attempts…" />}
      {rows?.length === 0 &&
        (failuresOnly ? (
          <EmptyState title="No failed attempts" testId="attempts-empty">
            None of the last 100 attempts failed or is waiting for a retry.
          </EmptyState>
        ) : (
          <EmptyState title="No attempts yet" testId="attempts-empty">
            Herald has not sent anything to this endpoint. Send a test event above to see a first attempt here.
          </EmptyState>
        ))}
      {rows && rows.length > 0 && (
        <table class="table table-attempts" data-testid="attempt-table">
          <caption class="visually-hidden">{failuresOnly ? 'Failed attempts' : 'Attempts'}</caption>
          <colgroup>
            <col class="col-time" />
            <col class="col-event" />
            <col class="col-response" />
            <col class="col-duration" />
            <col class="col-toggle" />
          </colgroup>
          <thead>
            <tr>
              <th scope="col">Time</th>
              <th scope="col">Event</th>
              <th scope="col">Response</th>
              <th scope="col" class="num">
                Duration
              </th>
              <th scope="col">
                <span class="visually-hidden">Details</span>
              </th>
            </tr>
          </thead>
          {rows.map((a) => (
            <AttemptRow key={a.id} endpointId={endpointId} attempt={a} />
          ))}
        </table>
      )}
    </section>
  );
}
