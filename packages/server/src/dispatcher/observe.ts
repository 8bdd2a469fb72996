import type { Metrics } from '../metrics/metrics.ts';
import type { Logger } from './record.ts';
import type { DispatcherParts } from './parts.ts';
import type { SeenResult } from './results.ts';

export interface AttemptLogger extends Logger {
  debug(obj: object, msg?: string): void;
  /** pino's: whether a line at this level would be written at all. */
  isLevelEnabled?(level: string): boolean;
}

/**
 * Wraps a dispatcher's `record` so that each written batch is counted and
 * logged: one log line and one count per attempt sent, and the endpoints
 * the batch disabled. After the write, so a batch retried after a failed
 * write is counted once. A result whose lease had run out ("late") is
 * counted too: its attempt was sent and is in the attempt log.
 *
 * Log levels: a succeeded or retrying attempt is `debug` (one line per
 * request would flood a busy Herald's log at `info`); a delivery that failed
 * for good is `info`, once per delivery; an endpoint disabled is `warn`
 * (the recorder logs it).
 */
export function observeResults(record: DispatcherParts['record'], o: { metrics?: Metrics; log?: AttemptLogger }): DispatcherParts['record'] {
  return async (results, now) => {
    const written = await record(results, now);
    for (const r of results as readonly SeenResult[]) {
      const a = r.attempt;
      if (!a) {
        // Nothing was sent: skipped (endpoint disabled), given back, or a request that could not be prepared (the dispatcher logs that).
        continue;
      }
      const result = r.seen?.result ?? 'other';
      o.metrics?.attempt({ outcome: a.outcome, result, endpointId: a.endpointId, durationMs: a.durationMs });
      const createdAt = r.seen?.eventCreatedAt;
      if (a.outcome === 'succeeded' && createdAt) o.metrics?.delivered((a.startedAt.getTime() + a.durationMs - createdAt.getTime()) / 1000);
      // A line per attempt is built only when it will be written: at the
      // default level, only a delivery that failed for good is.
      if (!o.log || (a.outcome !== 'failed' && o.log.isLevelEnabled?.('debug') === false)) continue;
      const line = {
        delivery: a.deliveryId,
        event: a.eventId,
        endpoint: a.endpointId,
        attempt: a.attemptNumber,
        outcome: a.outcome,
        result,
        status: a.statusCode,
        duration_ms: a.durationMs,
        // Not a redirect's: it names the Location, an address of the receiver's
        // that may hold a token, as the endpoint's own address may.
        ...(a.error && result !== '3xx' ? { error: a.error } : {}),
      };
      if (a.outcome === 'failed') o.log.info(line, 'delivery failed');
      else o.log.debug(line, a.outcome === 'succeeded' ? 'delivery attempt succeeded' : 'delivery attempt failed; it will be retried');
    }
    if (written.disabled.length > 0) o.metrics?.endpointsDisabled(written.disabled.length);
    return written;
  };
}
