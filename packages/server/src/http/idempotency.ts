import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { canonicalJson } from '../core/envelope.ts';
import { decryptSecret, encryptSecret } from '../core/secrets.ts';
import { HeraldError, invalidField } from '../errors.ts';
import type { ServiceDeps } from '../services/deps.ts';
import * as q from '../storage/queries/idempotency-keys.ts';

/** A key still unfinished after this long belongs to a request whose process died; it may be taken over. */
const ABANDONED_AFTER_MS = 60_000;
const MUTATING = new Set(['POST', 'PATCH', 'PUT', 'DELETE']);

declare module 'fastify' {
  interface FastifyRequest {
    /** Set when this request claimed an Idempotency-Key and its response is to be stored. */
    idempotencyKey: string | undefined;
  }
}

interface StoredResponse {
  status: number;
  contentType: string | undefined;
  body: string;
}

/**
 * `Idempotency-Key` on every mutating request: the first response (anything
 * but a 5xx) is stored, encrypted, for 24 hours and replayed for the same key
 * with `Idempotent-Replayed: true`; the same key on another request is a 422;
 * while the first is still running, a 409. Keys are per account.
 */
export function idempotency(app: FastifyInstance, deps: ServiceDeps): void {
  app.decorateRequest('idempotencyKey', undefined);
  const context = (accountId: string, key: string) => `idempotency:${accountId}:${key}`;

  app.addHook('preHandler', async (req: FastifyRequest, reply: FastifyReply) => {
    const raw = req.headers['idempotency-key'];
    // Only for authenticated requests: keys are scoped to the caller's account.
    if (raw === undefined || !MUTATING.has(req.method) || !req.accountId) return;
    const key = Array.isArray(raw) ? raw[0]! : raw;
    if (!/^[\x21-\x7e]{1,255}$/.test(key)) {
      throw invalidField('headers.idempotency-key', 'must be 1 to 255 visible ASCII characters, e.g. a UUID');
    }
    // Keys older than a day (IDEMPOTENCY_KEY_TTL_MS) are swept by the maintainer.
    const now = deps.clock();
    const requestHash = createHash('sha256')
      .update(`${req.method} ${req.url}\n${req.body === undefined ? '' : canonicalJson(req.body)}`)
      .digest();
    const accountId = req.accountId;
    if (await q.claimIdempotencyKey(deps.db, { accountId, key, requestHash, now })) {
      req.idempotencyKey = key;
      return;
    }
    const seen = await q.getIdempotencyKey(deps.db, accountId, key);
    if (!seen) {
      // Pruned or released between the two statements: the client may simply retry.
      throw new HeraldError('idempotency_key_in_use', 'a request with this Idempotency-Key has just finished on another connection; retry it');
    }
    if (!seen.request_hash.equals(requestHash)) {
      throw new HeraldError('idempotency_key_reused', 'this Idempotency-Key was used for a different request (method, path or body); use a new key for a new request');
    }
    if (seen.status_code === null || seen.response_encrypted === null) {
      const abandoned = now.getTime() - seen.created_at.getTime() > ABANDONED_AFTER_MS;
      if (abandoned && (await q.takeOverIdempotencyKey(deps.db, { accountId, key, seenCreatedAt: seen.created_at, now }))) {
        req.idempotencyKey = key;
        return;
      }
      throw new HeraldError('idempotency_key_in_use', 'a request with this Idempotency-Key is still running; retry after it finishes');
    }
    const stored = JSON.parse(decryptSecret(deps.encryptionKey, seen.response_encrypted, context(accountId, key))) as StoredResponse;
    reply.code(stored.status).header('idempotent-replayed', 'true');
    if (stored.contentType) reply.header('content-type', stored.contentType);
    // Responses that reveal a secret once are not to be cached anywhere on the way.
    reply.header('cache-control', 'no-store');
    return reply.send(stored.body === '' ? undefined : stored.body);
  });

  app.addHook('onSend', async (req, reply, payload) => {
    const key = req.idempotencyKey;
    if (key === undefined) return payload;
    req.idempotencyKey = undefined;
    if (reply.statusCode >= 500) {
      await q.releaseIdempotencyKey(deps.db, req.accountId, key);
      return payload;
    }
    const body = payload === undefined || payload === null ? '' : typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : undefined;
    if (body === undefined) {
      // A streamed body cannot be stored; free the key rather than replay something else.
      await q.releaseIdempotencyKey(deps.db, req.accountId, key);
      return payload;
    }
    const contentType = reply.getHeader('content-type');
    const stored: StoredResponse = { status: reply.statusCode, contentType: typeof contentType === 'string' ? contentType : undefined, body };
    await q.completeIdempotencyKey(deps.db, {
      accountId: req.accountId,
      key,
      statusCode: reply.statusCode,
      responseEncrypted: encryptSecret(deps.encryptionKey, JSON.stringify(stored), context(req.accountId, key)),
    });
    return payload;
  });
}
