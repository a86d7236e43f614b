import type { FastifyInstance, FastifyRequest } from 'fastify';
import { problem, sendProblem } from './error-handler.ts';
import { addRouteHook, BODY_METHODS } from './route-hooks.ts';
import { withProgramScope } from '../db/program-share.ts';

// The bearer-token check of the API. How a token is looked up is the tokens module's business:
// app.ts passes the lookup in, so http/ depends on no module.

function bearerToken(request: FastifyRequest): string | null {
  const header = request.headers.authorization;
  if (!header) return null;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1]! : null;
}

/** Every route in `scope` needs a valid bearer token; the request then carries its answer (`request.auth`). */
export function requireBearerToken(scope: FastifyInstance, authenticate: (token: string) => Promise<FastifyRequest['auth'] | null>): void {
  scope.decorateRequest('auth', null as unknown as FastifyRequest['auth']);
  scope.addHook('onRequest', async (request, reply) => {
    const token = bearerToken(request);
    const auth = token === null ? null : await authenticate(token);
    if (!auth) {
      const detail = token === null ? 'Send the header Authorization: Bearer <token>.' : 'The bearer token is unknown or revoked.';
      return sendProblem(reply, problem(request, 401, 'unauthorized', detail));
    }
    request.auth = auth;
  });
}

/**
 * The writes of `scope` run on behalf of the request's program, so their transactions stay
 * within its share of the database pool (db/program-share.ts). A preHandler, after the body is
 * read: what runs from here (the handler, its transactions) keeps the scope.
 */
export function scopeWritesToProgram(scope: FastifyInstance, programIdOf: (request: FastifyRequest) => string): void {
  addRouteHook(scope, BODY_METHODS, 'preHandler', (request: FastifyRequest, _reply: unknown, done: () => void) => {
    withProgramScope(programIdOf(request), done);
  });
}
