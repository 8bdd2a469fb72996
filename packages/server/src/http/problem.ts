import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ERRORS, fieldPath, HeraldError, type ErrorCode, type FieldError, type LimitInfo } from '../errors.ts';
import { unavailableReason, type UnavailableReason } from '../storage/db.ts';

/** RFC 9457 problem details, with Herald's stable `code`. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  code: ErrorCode;
  detail: string;
  errors?: FieldError[];
  /** For limit_exceeded: which setting holds the limit, and its value. */
  limit?: LimitInfo;
  /** For database_unavailable: what is wrong with the database. */
  reason?: DatabaseProblemReason;
}

/** Why a request or a readiness check found the database unusable. */
export type DatabaseProblemReason = UnavailableReason | 'schema_outdated' | 'schema_too_new';

/** Seconds a client is asked to wait after `database_unavailable`: a restart or a failover takes a few. */
export const DATABASE_RETRY_AFTER_S = 5;

const UNAVAILABLE_DETAILS: Record<UnavailableReason, string> = {
  unreachable: 'Herald cannot reach its database',
  timeout: 'its database did not answer in time',
  read_only: 'its database refuses writes (it is read-only or a standby)',
};

/** The problem for a database that cannot serve; `detail` never names the server. */
export function databaseProblem(reason: DatabaseProblemReason, detail?: string): Problem {
  const text = detail ?? `${UNAVAILABLE_DETAILS[reason as UnavailableReason]}; try again after Retry-After seconds (a publish that names its event id is safe to repeat)`;
  return { ...problemOf('database_unavailable', text), reason };
}

export function problemOf(code: ErrorCode, detail: string, errors?: FieldError[], limit?: LimitInfo): Problem {
  const { status, title } = ERRORS[code];
  return { type: `https://herald.dev/problems/${code}`, title, status, code, detail, ...(errors ? { errors } : {}), ...(limit ? { limit } : {}) };
}

export function sendProblem(reply: FastifyReply, problem: Problem): FastifyReply {
  // A moment is enough: `busy` means work in this process, not a client's quota.
  if (problem.code === 'busy' && !reply.hasHeader('retry-after')) reply.header('retry-after', '1');
  if (problem.code === 'database_unavailable' && !reply.hasHeader('retry-after')) reply.header('retry-after', String(DATABASE_RETRY_AFTER_S));
  return reply.code(problem.status).type('application/problem+json; charset=utf-8').send(problem);
}

interface AjvLikeError {
  instancePath: string;
  keyword: string;
  message?: string;
  params: Record<string, unknown>;
}

/** Turns fastify's schema validation errors into field errors a person can act on. */
function fieldErrors(validation: AjvLikeError[], context: string | undefined): FieldError[] {
  return validation.map((e) => {
    const parts = e.instancePath.split('/').filter(Boolean);
    let message = e.message ?? 'is invalid';
    if (e.keyword === 'required') {
      parts.push(String(e.params.missingProperty));
      message = 'is required';
    } else if (e.keyword === 'additionalProperties') {
      parts.push(String(e.params.additionalProperty));
      message = 'is not a known field; remove it or check its spelling';
    }
    const field = fieldPath(parts) || (context === 'body' ? 'body' : String(context ?? 'request'));
    return { field: context === 'querystring' ? `query.${field}` : field, message };
  });
}

/** Maps every error to a problem; unexpected ones are logged and hidden behind a 500. */
export function toProblem(error: unknown, request: FastifyRequest): Problem {
  if (error instanceof HeraldError) return problemOf(error.code, error.message, error.errors, error.limit);
  const unavailable = unavailableReason(error);
  if (unavailable) {
    // Not Herald's fault and not the client's: logged as a warning, with the driver's own words.
    request.log.warn({ err: error }, 'the database could not serve a request');
    return databaseProblem(unavailable);
  }
  const fe = error as FastifyError & { validation?: AjvLikeError[]; validationContext?: string };
  if (fe.validation) {
    const errors = fieldErrors(fe.validation, fe.validationContext);
    return problemOf('validation_failed', errors.map((e) => `${e.field}: ${e.message}`).join('; '), errors);
  }
  switch (fe.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return problemOf('payload_too_large', `the request body exceeds the limit of ${request.routeOptions.bodyLimit ?? '?'} bytes; send fewer events per batch`);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return problemOf('unsupported_media_type', 'send the body as JSON with "Content-Type: application/json"');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return problemOf('malformed_json', 'the body is empty; send a JSON object');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return problemOf('malformed_json', `the body is not valid JSON: ${fe.message}`);
  }
  if (fe instanceof SyntaxError) {
    return problemOf('malformed_json', `the body is not valid JSON: ${fe.message}`);
  }
  // Any other client error fastify raises (a Content-Length that does not match
  // the body, a malformed %-escape in the path, an over-long path parameter).
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    const field = fe.code === 'FST_ERR_CTP_INVALID_CONTENT_LENGTH' ? 'headers.content-length' : /^FST_ERR_(BAD_URL|MAX_PARAM_LENGTH|INVALID_URL)$/.test(fe.code) ? 'path' : 'request';
    return problemOf('validation_failed', `${field}: ${fe.message}`, [{ field, message: fe.message }]);
  }
  request.log.error({ err: error }, "unhandled error");
  return problemOf('internal_error', 'Herald could not complete the request; it has been logged. Try again, and report it if it persists.');
}

/**
 * Once the app is closing, a request that still arrives (on a kept-alive
 * connection, say) gets a 503 problem and the connection is closed, instead
 * of fastify's own plain JSON answer (`return503OnClosing`).
 */
export function refuseWhileClosing(app: FastifyInstance): void {
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onRequest', async (_request, reply) => {
    if (!closing) return;
    reply.header('connection', 'close').header('retry-after', '1');
    throw new HeraldError('shutting_down', 'this Herald process is shutting down; send the request again (to another process, or to this one once it is back)');
  });
}
