import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Db } from '../db/transaction.ts';
import type { Clock } from '../domain/clock.ts';
import { authenticateToken, type Authenticated, type TokenCacheOptions } from '../modules/tokens/token.service.ts';
import { problem, sendProblem } from './error-handler.ts';

declare module 'fastify' {
  interface FastifyRequest {
    auth: Authenticated;
  }
}

function bearerToken(request: FastifyRequest): string | null {
  const header = request.headers.authorization;
  if (!header) return null;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1]! : null;
}

/** Every route in `scope` needs a valid bearer token; the request then carries its program. */
export function requireBearerToken(scope: FastifyInstance, db: Db, cache: TokenCacheOptions, clock: Clock): void {
  scope.decorateRequest('auth', null as unknown as Authenticated);
  scope.addHook('onRequest', async (request, reply) => {
    const token = bearerToken(request);
    const auth = token === null ? null : await authenticateToken(db, token, cache, clock);
    if (!auth) {
      const detail = token === null ? 'Send the header Authorization: Bearer <token>.' : 'The bearer token is unknown or revoked.';
      return sendProblem(reply, problem(request, 401, 'unauthorized', detail));
    }
    request.auth = auth;
  });
}
