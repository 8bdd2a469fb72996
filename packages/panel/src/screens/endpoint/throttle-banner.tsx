import type { Endpoint } from '../../api/types.ts';
import { TimeAgo } from '../../components/time-ago.tsx';

/**
 * The automatic slow-down, while it lasts: the receiver answered 429 or 503,
 * so Herald waits and sends fewer requests at once until it answers 2xx again.
 * Nothing is lost meanwhile; it is shown so that slower deliveries are explained.
 */
export function ThrottleBanner({ throttle }: { throttle: NonNullable<Endpoint['throttle']> }) {
  const { until, max_in_flight: cap } = throttle;
  return (
    <section class="banner banner-warning" aria-labelledby="throttle-heading" data-testid="throttle-banner">
      <h2 id="throttle-heading" class="banner-title">
        Slowed down: the receiver answered 429 (too many requests) or 503 (unavailable)
      </h2>
      <p>
        Herald sends to it more slowly until it answers with success again
        {until ? (
          <>
            : no new request until <TimeAgo iso={until} /> (<span class="nowrap" data-testid="throttle-until">{new Date(until).toLocaleString()}</span>)
          </>
        ) : null}
        {cap !== null ? (
          <>
            {until ? ', then ' : ': '}
            <strong data-testid="throttle-cap">
              at most {cap} {cap === 1 ? 'request' : 'requests'} at a time
            </strong>
            , one more after each success
          </>
        ) : null}
        .
      </p>
      <p>Nothing is lost: deliveries wait their turn and go out as the receiver allows.</p>
    </section>
  );
}
