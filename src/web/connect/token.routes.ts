import { Type } from '@sinclair/typebox';
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

/**
 * The endpoint's reference (docs only: as a schema it would validate, and this endpoint answers
 * any unreadable or wrong input with the spec's own 400 bodies).
 */
const TOKEN_DOCS = {
  tags: ['Connect'],
  summary: 'Exchange an authorization code for a bearer token',
  description:
    "Step 2 of the connect flow: the automation tool sends the `code` it received on its redirect URI and gets the program's bearer token (`tdm_…`). A code is single use and valid 10 minutes; a reused code is refused and revokes the token it gave. Form-encoded or JSON; `client_id`, `client_secret`, `grant_type` and HTTP Basic credentials are accepted and ignored. Answers carry `Cache-Control: no-store`. Errors keep the original service's bodies, not problem details.",
  consumes: ['application/x-www-form-urlencoded', 'application/json'],
  params: Type.Object({ integration: Type.String({ description: 'the integration, as the operator configured it (`zapier`, `n8n`, `make` …)' }) }),
  body: Type.Object(
    {
      code: Type.String({ description: 'the authorization code from the redirect' }),
      redirect_uri: Type.Optional(Type.String({ description: 'if sent, must equal the redirect URI the code was issued for' })),
      code_verifier: Type.Optional(Type.String({ description: 'PKCE: required when the authorization request sent a code_challenge (S256)' })),
      client_id: Type.Optional(Type.String({ description: 'ignored' })),
      client_secret: Type.Optional(Type.String({ description: 'ignored' })),
      grant_type: Type.Optional(Type.String({ description: 'ignored (`authorization_code`)' })),
    },
    { examples: [{ code: 'Yp3Kq8vN2xR7mT4wL9sB6dF1hJ5cA0eG3iU8oZ2nQ7k', redirect_uri: 'https://zapier.com/dashboard/auth/oauth/return/App123CLIAPI/', grant_type: 'authorization_code' }] },
  ),
  response: {
    200: Type.Object({ access_token: Type.String({ description: 'the bearer token (`tdm_…`) for `Authorization: Bearer`' }) }, { description: 'The bearer token.', examples: [{ access_token: 'tdm_q2Xv9LrT4mZ8wN1bK7cH3sJ6dF0gA5eP9uY2iO4nR8t' }] }),
    400: Type.Object(
      { error: Type.String({ enum: [CODE_REQUIRED, INVALID_CODE] }) },
      {
        description: "`Code is required`: no `code`, or a body that cannot be read. `Invalid code`: unknown, used, expired, issued for another integration or redirect URI, or a PKCE verifier that does not match.",
        examples: [{ error: INVALID_CODE }],
      },
    ),
    500: Type.Object({ error: Type.String({ enum: ['Server error'] }) }, { description: 'Something unexpected failed.', examples: [{ error: 'Server error' }] }),
  },
};

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

  app.post<{ Params: { integration: string } }>('/api/:integration/token', { config: { csrf: 'exempt', docs: TOKEN_DOCS } }, async (request, reply) => {
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
