import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance } from 'fastify';

/** The header a request id comes in (from a proxy or a client that made one) and goes back out in. */
export const REQUEST_ID_HEADER = 'x-request-id';

/**
 * An id a proxy or client may choose: up to 128 characters, letters, digits
 * and `-_.:+=/@` (UUIDs, ULIDs, base64, the `trace-id`s of common proxies).
 * Anything else is replaced, so that a log line never carries what a client
 * wrote in a form a log reader could take for something else.
 */
const SANE_REQUEST_ID = /^[A-Za-z0-9\-_.:+=/@]{1,128}$/;

/** fastify's genReqId: the incoming X-Request-Id when it is sane, a new UUID otherwise. */
export function requestIdOf(req: IncomingMessage): string {
  const given = req.headers[REQUEST_ID_HEADER];
  return typeof given === 'string' && SANE_REQUEST_ID.test(given) ? given : randomUUID();
}

/** Every answer says which id its log lines carry (`reqId`), errors and 404s included. */
export function echoRequestId(app: FastifyInstance): void {
  app.addHook('onSend', async (request, reply, payload) => {
    reply.header(REQUEST_ID_HEADER, request.id);
    return payload;
  });
}
