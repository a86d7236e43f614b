import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, statusTitle, type ErrorCode, type FieldError } from '../domain/errors.ts';
import { toFieldErrors } from './validation.ts';
import { isForeignKeyViolation, isPoolExhausted } from '../db/errors.ts';

export interface ProblemBody {
  type: 'about:blank';
  title: string;
  status: number;
  detail: string;
  code: ErrorCode;
  errors?: FieldError[];
  existingId?: string | number;
  requestId: string;
}

export function problem(request: FastifyRequest, status: number, code: ErrorCode, detail: string, errors?: FieldError[], existingId?: string | number): ProblemBody {
  return { type: 'about:blank', title: statusTitle[status] ?? 'Error', status, detail, code, ...(errors ? { errors } : {}), ...(existingId !== undefined ? { existingId } : {}), requestId: request.id };
}

export function sendProblem(reply: FastifyReply, body: ProblemBody): FastifyReply {
  if (body.status === 401) reply.header('www-authenticate', 'Bearer');
  return reply.code(body.status).type('application/problem+json').send(body);
}

/** Maps every error the framework or our code can raise onto the contract's problem body. */
function classify(error: FastifyError | ApiError): { status: number; code: ErrorCode; detail: string; errors?: FieldError[]; existingId?: string | number } {
  if (error instanceof ApiError) return error;
  if (isForeignKeyViolation(error)) {
    return { status: 404, code: 'not_found', detail: 'Something this request refers to was deleted while it ran; nothing was written.' };
  }
  const fe = error as FastifyError;
  if (fe.validation) {
    const where = fe.validationContext === 'body' ? 'request body' : 'query string';
    return { status: 422, code: 'validation_failed', detail: `The ${where} is invalid.`, errors: toFieldErrors(fe.validation as never) };
  }
  switch (fe.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { status: 413, code: 'payload_too_large', detail: 'The request body is larger than 1 MiB.' };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { status: 400, code: 'bad_request', detail: 'The request body must be sent as application/json.' };
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return { status: 400, code: 'bad_request', detail: 'The request body is empty; send a JSON object.' };
    case 'FST_ERR_BAD_URL':
      return { status: 400, code: 'bad_request', detail: malformedEncoding('path') };
  }
  if (fe.statusCode === 400 || error instanceof SyntaxError) {
    return { status: 400, code: 'bad_request', detail: 'The request body is not valid JSON.' };
  }
  if (fe.statusCode === 413) return { status: 413, code: 'payload_too_large', detail: 'The request body is too large.' };
  if (fe.statusCode === 429) return { status: 429, code: 'rate_limited', detail: 'Too many requests; retry after the time in Retry-After.' };
  // Any other client error the framework raises stays a client error, with its own status.
  if (fe.statusCode !== undefined && fe.statusCode >= 400 && fe.statusCode < 500) {
    return { status: fe.statusCode, code: fe.statusCode === 404 ? 'not_found' : 'bad_request', detail: fe.message || 'The request cannot be served.' };
  }
  // Every pooled connection busy for the whole wait: the server is overloaded, not broken.
  if (isPoolExhausted(error)) return { status: 503, code: 'unavailable', detail: 'The server is busy; retry after the time in Retry-After.' };
  return { status: 500, code: 'internal', detail: 'An unexpected error occurred. Quote the requestId when reporting it.' };
}

/** Why a path or query string with a broken %-escape is refused. */
export function malformedEncoding(part: 'path' | 'query string'): string {
  return `The request ${part} is not valid percent-encoding: each % must start an escape of two hex digits, and the escapes must spell UTF-8.`;
}

/**
 * Fastify's `frameworkErrors`: what the router raises before any route or hook runs (a path
 * with a broken %-escape, a parameter too long). Without it Fastify answers its own JSON, not
 * the contract's problem body.
 */
export function answerFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const { status, code, detail } = classify(error);
  reply.header('x-request-id', request.id);
  return sendProblem(reply, problem(request, status, code, detail));
}

/** Whether a path is the JSON API's (problem bodies), not a page's. */
export function isApiPath(url: string): boolean {
  return url === '/api' || url.startsWith('/api/') || url.startsWith('/api?');
}

/**
 * `notFoundPage` answers unknown paths outside /api (a page of the site); the API's keep the
 * problem body.
 */
export function registerErrorHandler(app: FastifyInstance, options: { notFoundPage?: (request: FastifyRequest, reply: FastifyReply) => FastifyReply } = {}): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const { status, code, detail, errors, existingId } = classify(error);
    if (status >= 500) request.log.error({ err: error }, 'request failed');
    if (status === 503) reply.header('retry-after', '1');
    return sendProblem(reply, problem(request, status, code, detail, errors, existingId));
  });
  app.setNotFoundHandler((request, reply) =>
    options.notFoundPage && !isApiPath(request.url)
      ? options.notFoundPage(request, reply)
      : sendProblem(reply, problem(request, 404, 'not_found', `No route ${request.method} ${request.url.split('?')[0]}.`)),
  );
}
