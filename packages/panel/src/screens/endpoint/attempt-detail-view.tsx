import type { AttemptDetail } from '../../api/types.ts';
import { formatDuration, formatExact } from '../../lib/time.ts';

/** Pretty-prints a JSON body; anything else is shown as it is. */
function pretty(body: string): string {
  try {
    return JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    return body;
  }
}

/** What Herald sent and what came back, for one attempt. */
export function AttemptDetailView({ attempt: a }: { attempt: AttemptDetail }) {
  return (
    <div class="attempt-detail" data-testid="attempt-detail">
      <dl class="facts facts-inline">
        <dt>Delivery ID</dt>
        <dd class="mono">{a.id}</dd>
        <dt>Event ID</dt>
        <dd class="mono">{a.event_id}</dd>
        <dt>Sent</dt>
        <dd>{formatExact(a.started_at)}</dd>
        <dt>Attempt</dt>
        <dd>{a.is_test ? 'Test (not retried)' : `#${a.attempt_number}`}</dd>
        <dt>Took</dt>
        <dd>{formatDuration(a.duration_ms)}</dd>
        {a.error && (
          <>
            <dt>Error</dt>
            <dd>{a.error}</dd>
          </>
        )}
      </dl>
      <h3 class="detail-heading">Request</h3>
      {a.request.url && (
        <p class="mono break small">
          POST {a.request.url}
        </p>
      )}
      <table class="headers" data-testid="request-headers">
        <caption class="visually-hidden">Request headers</caption>
        <tbody>
          {Object.entries(a.request.headers).map(([name, value]) => (
            <tr key={name}>
              <th scope="row" class="mono">
                {name}
              </th>
              <td class="mono break">{value}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <pre class="code" tabIndex={0} aria-label="Request body" data-testid="request-body">
        {pretty(a.request.body)}
      </pre>
      <h3 class="detail-heading">Response {a.status_code !== null && <span class="muted">({a.status_code})</span>}</h3>
      {a.response_excerpt ? (
        <>
          <pre class="code" tabIndex={0} aria-label="Start of the response body" data-testid="response-excerpt">
            {a.response_excerpt}
          </pre>
          <p class="hint">Herald keeps the first bytes of the response only; it never interprets them.</p>
        </>
      ) : (
        <p class="muted">{a.status_code === null ? 'No response: the request did not get an answer.' : 'The response had no body.'}</p>
      )}
    </div>
  );
}
