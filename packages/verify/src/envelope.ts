import { WebhookVerificationError } from './errors.ts';
import type { WebhookEvent } from './events.ts';

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Parses a body whose signature has been verified into the event envelope.
 * Checks the envelope's shape only; fields beyond the four are kept, so a
 * later Herald can add some without breaking receivers.
 *
 * @param text the body when it was given as a string (saves decoding it again)
 */
export function parseEnvelope(bytes: Uint8Array, text: string | undefined): WebhookEvent {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text ?? utf8.decode(bytes));
  } catch (cause) {
    throw invalid('it is not UTF-8 JSON', cause);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw invalid('it is not a JSON object');
  const envelope = parsed as Record<string, unknown>;
  for (const field of ['id', 'type'] as const) {
    if (typeof envelope[field] !== 'string' || envelope[field] === '') throw invalid(`"${field}" is not a non-empty string`);
  }
  if (typeof envelope.created_at !== 'string') throw invalid('"created_at" is not a string');
  const data = envelope.data;
  if (typeof data !== 'object' || data === null || Array.isArray(data)) throw invalid('"data" is not an object');
  return envelope as unknown as WebhookEvent;
}

function invalid(reason: string, cause?: unknown): WebhookVerificationError {
  return new WebhookVerificationError(
    'invalid_envelope',
    `The signature is valid but the body is not an event envelope { id, type, created_at, data }: ${reason}. ` +
      'Herald never sends such a body; answer 400 and report it with the X-Service-Delivery-ID header.',
    { cause },
  );
}
