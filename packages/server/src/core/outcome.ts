/**
 * Classifies what happened to one HTTP attempt, in one pure function, by
 * stage and kind: the outcome table of docs/receiving-webhooks.md and
 * docs/delivery.md.
 */

/** How a request failed before a status line arrived. */
export const TRANSPORT_ERRORS = {
  timeout: 'timed out',
  connection_refused: 'connection refused',
  connection_reset: 'connection reset by the receiver',
  dns: 'DNS lookup failed',
  tls: 'TLS handshake failed',
  aborted: 'aborted',
  network: 'network error',
  address_refused: 'address not allowed (private, loopback or other non-public network)',
} as const;
export type TransportErrorKind = keyof typeof TRANSPORT_ERRORS;

export type AttemptResult =
  | { stage: 'response'; status: number; location?: string; retryAfter?: string }
  | { stage: 'transport'; kind: TransportErrorKind; message: string };

export type Verdict = 'success' | 'retry' | 'permanent';

export interface Outcome {
  verdict: Verdict;
  /** A message a person understands, or null on success. */
  error: string | null;
  /** The receiver's status code, when it answered. */
  status: number | null;
}

export function classifyOutcome(result: AttemptResult): Outcome {
  if (result.stage === 'transport') {
    // An address the policy refuses was never connected to, and asking again
    // would only ask the policy again: the receiver's address (or its DNS
    // record) has to change, or the operator has to allow the network, and a
    // redelivery then sends it.
    if (result.kind === 'address_refused') return { verdict: 'permanent', error: result.message, status: null };
    // Timeouts, refused/reset connections, DNS and TLS failures: all retried.
    return { verdict: 'retry', error: result.message, status: null };
  }
  const { status } = result;
  if (status >= 200 && status < 300) return { verdict: 'success', error: null, status };
  if (status === 429 || (status >= 500 && status < 600)) {
    return { verdict: 'retry', error: `HTTP ${status}${status === 429 ? ' (too many requests)' : ''}`, status };
  }
  if (status >= 300 && status < 400) {
    const where = result.location ? ` to ${result.location}` : '';
    return {
      verdict: 'permanent',
      error: `HTTP ${status}: redirect${where} not followed; register the final address of your receiver`,
      status,
    };
  }
  if (status >= 400 && status < 500) return { verdict: 'permanent', error: `HTTP ${status}`, status };
  // 1xx that is not an interim response, or a status outside 100..599.
  return { verdict: 'permanent', error: `HTTP ${status}: not a valid final status`, status };
}

/**
 * How an attempt ended, in a few fixed words for the metrics and the log:
 * the status class (`429` apart: it slows the endpoint down), or the
 * transport failure's kind.
 */
export function resultLabel(result: AttemptResult): string {
  if (result.stage === 'transport') return result.kind;
  const { status } = result;
  if (status === 429) return '429';
  return status >= 200 && status < 600 ? `${Math.floor(status / 100)}xx` : 'other';
}
