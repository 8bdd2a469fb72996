import type { DispatcherConfig } from '../config.ts';
import { unixSeconds, type Clock } from '../core/clock.ts';
import { UuidV7Maker } from '../core/ids.ts';
import { buildRequestHeaders, signatureOf } from '../core/request-headers.ts';
import type { Send } from '../outbound/send.ts';
import type { ClaimedDelivery } from '../storage/queries/claim-deliveries.ts';
import type { DeliveryResult } from '../storage/queries/record-results.ts';
import { headersOpener, secretOpener } from './openers.ts';
import type { Logger } from './record.ts';
import { resultOf, unsent } from './results.ts';

/** A delivery is sent only while its lease has the request's deadline and this much more left. */
const LEASE_MARGIN_MS = 1_000;

/**
 * How the dispatcher attempts one claimed delivery: it skips it (its endpoint
 * was disabled), gives it back unsent (the worker is stopping, or too little
 * of the lease is left for the request's deadline), fails it (the request
 * cannot be prepared), or signs and sends it, and says what became of it.
 * It never throws for a receiver's doing.
 */
export function createAttempter(p: {
  config: DispatcherConfig;
  clock: Clock;
  log?: Logger;
  encryptionKey: Buffer;
  send: Send;
  random: () => number;
  /** Where each request in flight leaves a way to cut it short, for a shutdown. */
  cancels: Set<() => void>;
  /** Erases a previous secret whose overlap has ended (`DispatcherParts.erasePreviousSecret`). */
  erasePreviousSecret?: (endpointId: string, until: Date, now: Date) => Promise<unknown>;
}) {
  const { config, clock, log } = p;
  const openSecret = secretOpener(p.encryptionKey);
  const customHeadersOf = headersOpener(p.encryptionKey);
  const openPreviousSecret = secretOpener(p.encryptionKey);
  const attemptIds = new UuidV7Maker();
  // Expired previous secrets already being erased, so a claim of many
  // deliveries to the endpoint erases it once.
  const erasing = new Set<string>();

  /**
   * The previous secret while its overlap runs. The first attempt that finds
   * it expired erases it (the maintainer sweeps those no attempt comes for).
   */
  function previousSecretOf(d: ClaimedDelivery, now: Date): string | undefined {
    const until = d.previous_secret_until;
    if (d.previous_secret_encrypted === null || until === null) return undefined;
    if (until.getTime() > now.getTime()) return openPreviousSecret(d.endpoint_id, d.previous_secret_encrypted);
    const key = `${d.endpoint_id} ${until.getTime()}`;
    if (p.erasePreviousSecret && !erasing.has(key)) {
      erasing.add(key);
      p.erasePreviousSecret(d.endpoint_id, until, now).then(
        () => erasing.delete(key),
        (err: unknown) => {
          erasing.delete(key);
          log?.warn({ err, endpoint: d.endpoint_id }, 'an expired previous signing secret could not be erased; the maintainer will');
        },
      );
    }
    return undefined;
  }

  return async function attempt(d: ClaimedDelivery, leaseSafeUntil: number, stopping: boolean): Promise<DeliveryResult> {
    if (!d.enabled) return unsent(d, 'skipped', 'endpoint disabled');
    if (stopping) return unsent(d, 'given_back');
    if (performance.now() + config.requestTimeoutMs + LEASE_MARGIN_MS > leaseSafeUntil) {
      log?.warn({ delivery: d.id }, 'too little of the lease was left to send the delivery; it is given back');
      return unsent(d, 'given_back');
    }
    // Signed now, as it is sent: the timestamp is the send time.
    const startedAt = clock();
    const id = attemptIds.next(startedAt.getTime());
    let headers: Record<string, string>;
    try {
      headers = buildRequestHeaders({
        eventType: d.type,
        eventId: d.event_id,
        attemptId: id,
        timestamp: unixSeconds(startedAt),
        body: d.body,
        scheme: d.signature_scheme,
        secret: openSecret(d.endpoint_id, d.secret_encrypted),
        previousSecret: previousSecretOf(d, startedAt),
        custom: customHeadersOf(d),
      });
    } catch (err) {
      // Nothing was sent, and trying again would fail the same way (a signing
      // secret that does not decrypt, say): the delivery fails now, saying
      // why, instead of its lease running out and counting as a lost send.
      log?.error({ err, delivery: d.id, endpoint: d.endpoint_id }, 'the request could not be prepared; the delivery fails');
      return unsent(d, 'failed', `Herald could not prepare the request: ${(err as Error).message}`);
    }
    const sent = await p.send({ url: d.url, headers, body: d.body, timeoutMs: config.requestTimeoutMs, cancels: p.cancels });
    return resultOf(d, sent, { id, startedAt, signature: signatureOf(headers) }, { now: clock(), random: p.random, schedule: config.retry });
  };
}
