import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import type { AppServices } from '../../app-services.ts';
import { ApiError } from '../../domain/errors.ts';
import { exchangeAuthorizationCode } from '../../modules/connect/authorization-code.service.ts';
import { findIntegration } from '../../modules/integrations/integration.service.ts';

// Spec 5.2 steps 4–5: POST {site}/api/{integration}/token with a form-encoded (or JSON) `code`
// → {"access_token": "tdm_…"}. Not part of /api/v1: no bearer token, and the spec's own error
// bodies, {"error": "Code is required"} and {"error": "Invalid code"}, both with status 400.
// Parameters the flow does not need (client_id, client_secret, grant_type, HTTP Basic) are ignored.

const CODE_REQUIRED = 'Code is required';
const INVALID_CODE = 'Invalid code';

function sendTokenResponse(reply: FastifyReply, status: number, body: Record<string, string>) {
  return reply.code(status).header('cache-control', 'no-store').header('pragma', 'no-cache').type('application/json; charset=utf-8').send(JSON.stringify(body));
}

export const tokenEndpoint: FastifyPluginAsync<AppServices> = async (app, { db, clock }) => {
  app.setErrorHandler((error: Error & { statusCode?: number }, request, reply) => {
    if (error instanceof ApiError && error.status === 400) return sendTokenResponse(reply, 400, { error: error.detail });
    // A body that cannot be read (bad JSON, unsupported type, too large) holds no code.
    if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) return sendTokenResponse(reply, 400, { error: CODE_REQUIRED });
    request.log.error({ err: error }, 'token exchange failed');
    return sendTokenResponse(reply, 500, { error: 'Server error' });
  });

  app.post<{ Params: { integration: string } }>('/api/:integration/token', { config: { csrf: 'exempt' } }, async (request, reply) => {
    const body = (typeof request.body === 'object' && request.body !== null ? request.body : {}) as Record<string, unknown>;
    const { code, redirect_uri: redirectUri, code_verifier: codeVerifier } = body;
    if (code === undefined || code === '') throw new ApiError('bad_request', CODE_REQUIRED);
    const optional = [redirectUri, codeVerifier].every((value) => value === undefined || typeof value === 'string');
    if (typeof code !== 'string' || code.length > 200 || !optional) throw new ApiError('bad_request', INVALID_CODE);
    const integration = await findIntegration(db, request.params.integration);
    if (!integration) throw new ApiError('bad_request', INVALID_CODE);
    const token = await exchangeAuthorizationCode(
      db,
      integration,
      { code, redirectUri: redirectUri as string | undefined, codeVerifier: codeVerifier as string | undefined },
      clock(),
    );
    request.log.info({ integration: integration.name, tokenId: token.id, programId: token.programId }, 'connect: token issued');
    return sendTokenResponse(reply, 200, { access_token: token.token });
  });
};
