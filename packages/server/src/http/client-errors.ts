import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { problemOf, type Problem } from './problem.ts';

/**
 * Answers what Node's HTTP parser rejects before a route runs (fastify's
 * `clientErrorHandler`) as problem+json, then closes the connection:
 * a request not received in full within the bound (408), headers over
 * Node's size limit (431), and anything that is not HTTP/1.1 (400).
 * Nothing is written once a response has begun.
 */
export function clientErrorHandler(bodyTimeoutMs: number) {
  return (err: NodeJS.ErrnoException, socket: Socket): void => {
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    let problem: Problem;
    if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
      problem = problemOf('request_timeout', `the request did not arrive in full within ${bodyTimeoutMs} ms; send the headers and the whole body without pausing`);
    } else if (err.code === 'HPE_HEADER_OVERFLOW') {
      problem = problemOf('headers_too_large', 'the request headers are too large; send fewer or shorter headers');
    } else {
      problem = problemOf('validation_failed', `request: not valid HTTP/1.1 (${err.message})`, [{ field: 'request', message: `is not valid HTTP/1.1 (${err.message})` }]);
    }
    const response = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (socket.writable && !response?.headersSent) {
      const body = JSON.stringify(problem);
      socket.write(
        `HTTP/1.1 ${problem.status} ${STATUS_CODES[problem.status]}\r\nContent-Type: application/problem+json; charset=utf-8\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    }
    socket.destroy();
  };
}
