import type { ErrorCode } from '../domain/errors.ts';
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { ConnectionError, FastifyInstance } from 'fastify';

// Errors Node's HTTP parser raises on a connection before (or while) a request is read: a
// request or its headers that did not arrive within REQUEST_TIMEOUT_MS / HEADERS_TIMEOUT_MS,
// headers too large, bytes that are not HTTP. No route ran, so the error handler never sees
// them; this answers them with the contract's problem body and closes the connection.

/** The id of each request Fastify has seen, so a request cut off mid-body answers with its own. */
const requestIds = new WeakMap<IncomingMessage, string>();

/** Fastify's `genReqId`: a random id, remembered for the request's connection errors. */
export function newRequestId(raw: IncomingMessage): string {
  const id = crypto.randomUUID();
  requestIds.set(raw, id);
  return id;
}

/** Node's error codes for a request that did not arrive in time (request or headers timeout). */
const TIMEOUT = 'ERR_HTTP_REQUEST_TIMEOUT';

function describe(code: string | undefined): { status: number; code: ErrorCode; detail: string } {
  if (code === TIMEOUT) {
    return { status: 408, code: 'request_timeout', detail: 'The request did not arrive in time; the connection is closed.' };
  }
  if (code === 'HPE_HEADER_OVERFLOW') {
    return { status: 431, code: 'bad_request', detail: 'The request headers are too large.' };
  }
  return { status: 400, code: 'bad_request', detail: 'The request is not valid HTTP.' };
}

/** Fastify's `clientErrorHandler` (called with the instance as `this`): a problem body, then close. */
export function answerClientError(this: FastifyInstance, error: ConnectionError, socket: Socket): void {
  // Reset by the peer, or already closed: nobody to answer.
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const { status, code, detail } = describe(error.code);
  // The response of the request being read, when its headers had arrived (Node's own field).
  const response = (socket as Socket & { _httpMessage?: ServerResponse })._httpMessage;
  const requestId = (response && requestIds.get(response.req)) ?? crypto.randomUUID();
  if (status === 408) this.log.info({ reqId: requestId, remoteAddress: socket.remoteAddress }, 'request timed out: connection closed');
  else this.log.debug({ reqId: requestId, remoteAddress: socket.remoteAddress, err: error }, 'client error: connection closed');
  // Answer only when no response has started on this socket, or the bytes would corrupt it.
  if (socket.writable && !response?.headersSent) {
    const title = STATUS_CODES[status] ?? 'Error';
    const body = JSON.stringify({ type: 'about:blank', title, status, detail, code, requestId });
    socket.write(
      `HTTP/1.1 ${status} ${title}\r\nContent-Type: application/problem+json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `X-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}
