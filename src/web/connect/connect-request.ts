import type { Db } from '../../db/transaction.ts';
import { ApiError } from '../../domain/errors.ts';
import { findIntegration, type Integration } from '../../modules/integrations/integration.service.ts';

// The tool's authorization request (spec 5.2 step 1), read from the query of the first page
// and from the hidden fields of every later form, and checked in full each time. Anything
// wrong is an error page with status 400 — never a redirect to an address we cannot trust.

export interface ConnectRequest {
  integration: Integration;
  /** Returned to the tool unchanged. */
  state: string;
  /** One of the integration's registered URIs, compared as exact strings. */
  redirectUri: string;
  /** Kept only so the parameters round-trip through the pages unchanged. */
  responseType: 'code' | undefined;
  /** PKCE S256 challenge, when the tool sent one. */
  codeChallenge: string | null;
}

const MAX_STATE_LENGTH = 2000;

function badRequest(detail: string): ApiError {
  return new ApiError('bad_request', detail);
}

/** A single text parameter; a repeated one (an array) counts as invalid, not as missing. */
function text(params: Record<string, unknown>, name: string): string | undefined {
  const value = params[name];
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string') throw badRequest(`The connection link is not valid: "${name}" is given more than once.`);
  return value;
}

export async function readConnectRequest(db: Db, integrationName: string, params: Record<string, unknown>): Promise<ConnectRequest> {
  const integration = await findIntegration(db, integrationName);
  if (!integration) throw badRequest('The connection link is not valid: this Tandem service does not know the app that sent you here.');
  const redirectUri = text(params, 'redirect_uri');
  if (redirectUri === undefined || !integration.redirectUris.includes(redirectUri)) {
    throw badRequest(`The connection link is not valid: ${integration.displayName} asked to send you back to an address that is not registered for it.`);
  }
  const state = text(params, 'state');
  if (state === undefined || state.length > MAX_STATE_LENGTH) {
    throw badRequest(`The connection link is not valid: ${integration.displayName} did not send the required "state" parameter.`);
  }
  const responseType = text(params, 'response_type');
  if (responseType !== undefined && responseType !== 'code') throw badRequest('The connection link is not valid: response_type must be "code".');
  const codeChallenge = text(params, 'code_challenge');
  const method = text(params, 'code_challenge_method');
  if (codeChallenge !== undefined || method !== undefined) {
    // S256 only: "plain" (the default when the method is left out) would put the secret in the URL.
    if (method !== 'S256') throw badRequest('The connection link is not valid: code_challenge_method must be "S256".');
    if (codeChallenge === undefined || !/^[A-Za-z0-9_-]{43}$/.test(codeChallenge)) {
      throw badRequest('The connection link is not valid: code_challenge must be a base64url SHA-256 (43 characters).');
    }
  }
  return { integration, state, redirectUri, responseType: responseType === undefined ? undefined : 'code', codeChallenge: codeChallenge ?? null };
}

/** The request's parameters, for hidden form fields and links between the flow's pages. */
export function connectParams(request: ConnectRequest): Record<string, string> {
  return {
    state: request.state,
    redirect_uri: request.redirectUri,
    ...(request.responseType ? { response_type: request.responseType } : {}),
    ...(request.codeChallenge ? { code_challenge: request.codeChallenge, code_challenge_method: 'S256' } : {}),
  };
}

/** A URL of the flow (`/connect/{name}/{page}`) carrying the request's parameters. */
export function connectUrl(request: ConnectRequest, page: string, extra: Record<string, string> = {}): string {
  const query = new URLSearchParams({ ...connectParams(request), ...extra });
  return `/connect/${request.integration.name}/${page}?${query}`;
}

/**
 * The tool's redirect URI with our parameters appended. Its own query is kept as registered,
 * byte for byte (re-serialising it through URLSearchParams could re-encode it).
 */
export function redirectBack(request: ConnectRequest, params: Record<string, string>): string {
  const uri = request.redirectUri;
  const separator = !uri.includes('?') ? '?' : uri.endsWith('?') || uri.endsWith('&') ? '' : '&';
  // encodeURIComponent, not URLSearchParams: a space becomes %20, which every decoder reads
  // back as a space ("+" would come back as "+" from a plain percent-decoder).
  return uri + separator + Object.entries(params).map(([name, value]) => `${name}=${encodeURIComponent(value)}`).join('&');
}
