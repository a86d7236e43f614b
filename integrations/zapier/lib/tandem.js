'use strict';
/* global module */

// Shared plumbing: where the user's Tandem server is, how every request is authenticated, and
// how Tandem's errors (RFC 9457 problem details) become messages a Zapier user can act on.

/**
 * The server's base URL as the user typed it, made canonical: a missing scheme becomes
 * https://, trailing slashes and a pasted `/api/v1` (or `/api`) are dropped.
 * "tandem.example.com/" → "https://tandem.example.com".
 */
function normalizeSiteUrl(raw) {
  let value = String(raw == null ? '' : raw).trim();
  if (value === '') throw new Error('Enter the address of your Tandem server, such as https://tandem.example.com.');
  if (!/^https?:\/\//i.test(value)) value = `https://${value}`;
  let url;
  try {
    url = new URL(value);
  } catch {
    throw new Error(`"${raw}" is not a web address. Enter the address of your Tandem server, such as https://tandem.example.com.`);
  }
  url.search = '';
  url.hash = '';
  const path = url.pathname.replace(/\/+$/, '').replace(/\/api(\/v1)?$/i, '');
  return `${url.origin}${path}`;
}

/** The site URL of a connected account (authData), or of one being connected (inputData). */
function siteUrl(bundle) {
  const fromAuth = bundle.authData && bundle.authData.site_url;
  const fromInput = bundle.inputData && bundle.inputData.site_url;
  return normalizeSiteUrl(fromAuth || fromInput);
}

/** An absolute URL of the JSON API: apiUrl(bundle, '/sales') → https://…/api/v1/sales. */
function apiUrl(bundle, path) {
  return `${siteUrl(bundle)}/api/v1${path}`;
}

/** beforeRequest: every request sends the connection's bearer token (the token endpoint has none). */
function addBearerToken(request, z, bundle) {
  request.headers = request.headers || {};
  const token = bundle.authData && bundle.authData.access_token;
  if (token && !request.headers.Authorization && !request.headers.authorization) {
    request.headers.Authorization = `Bearer ${token}`;
  }
  if (!request.headers.Accept && !request.headers.accept) request.headers.Accept = 'application/json';
  return request;
}

function parseBody(response) {
  if (response.data !== undefined && response.data !== null) return response.data;
  try {
    return JSON.parse(response.content);
  } catch {
    return undefined;
  }
}

/** A z.errors.Error that says what Tandem refused and why, in words. */
function tandemError(z, response) {
  const status = response.status;
  const body = parseBody(response);
  if (status === 401) {
    return new z.errors.Error(
      'Tandem no longer accepts this connection: its access token was revoked (in the Tandem dashboard under Connected apps, ' +
        'or by the server\'s operator). Reconnect your Tandem account in Zapier.',
      'unauthorized',
      status,
    );
  }
  if (body && typeof body === 'object' && typeof body.detail === 'string') {
    // Problem details: {title, status, detail, code, errors: [{pointer, detail}], requestId}.
    const problems = Array.isArray(body.errors)
      ? body.errors.map((e) => `${String(e.pointer || '').replace(/^#\//, '') || 'request'}: ${e.detail}`)
      : [];
    const parts = [body.detail.replace(/\.?$/, '.')];
    if (problems.length > 0) parts.push(problems.join('; ') + '.');
    parts.push(`(Tandem answered HTTP ${status}${body.code ? `, ${body.code}` : ''}${body.requestId ? `, request ${body.requestId}` : ''})`);
    return new z.errors.Error(parts.join(' '), body.code || `http_${status}`, status);
  }
  if (body && typeof body === 'object' && typeof body.error === 'string') {
    // The connect flow's token endpoint: {"error":"Invalid code"} or {"error":"Code is required"}.
    return new z.errors.Error(
      `Tandem refused the authorization: ${body.error}. Codes are single use and expire after 10 minutes; connect your account again.`,
      'oauth_error',
      status,
    );
  }
  const text = typeof response.content === 'string' ? response.content.replace(/\s+/g, ' ').trim().slice(0, 200) : '';
  return new z.errors.Error(
    `Tandem answered HTTP ${status} at ${response.request && response.request.url}${text ? `: ${text}` : ''}. ` +
      'Check the server address of the connection and that the server is running.',
    `http_${status}`,
    status,
  );
}

/** afterResponse: any error status becomes a clear error, unless the caller handles it itself. */
function throwForTandemErrors(response, z) {
  if (response.status >= 400 && !response.skipThrowForStatus) throw tandemError(z, response);
  return response;
}

/** A request the caller handles when it fails with `status` (a search's 404): anything else still throws. */
async function requestAllowing(z, status, options) {
  const response = await z.request({ ...options, skipThrowForStatus: true });
  if (response.status === status) return response;
  if (response.status >= 400) throw tandemError(z, response);
  return response;
}

const TRUE = new Set(['true', 'yes', 'y', '1', 'on']);
const FALSE = new Set(['false', 'no', 'n', '0', 'off']);

/**
 * A JSON body from a Zap's input: only the fields the user filled in, with numbers and
 * booleans given their JSON types (Zapier may hand them over as text). A value that does not
 * convert is sent as it is, and Tandem's 422 names the field.
 */
function bodyFrom(inputData, types) {
  const body = {};
  for (const [key, type] of Object.entries(types)) {
    let value = inputData[key];
    if (value === undefined || value === null) continue;
    if (typeof value === 'string') {
      value = value.trim();
      if (value === '') continue;
    }
    if ((type === 'number' || type === 'integer') && typeof value === 'string' && /^-?\d+(\.\d+)?$/.test(value)) value = Number(value);
    if (type === 'boolean' && typeof value === 'string') {
      const lower = value.toLowerCase();
      if (TRUE.has(lower)) value = true;
      else if (FALSE.has(lower)) value = false;
    }
    body[key] = value;
  }
  return body;
}

module.exports = {
  normalizeSiteUrl,
  siteUrl,
  apiUrl,
  addBearerToken,
  throwForTandemErrors,
  tandemError,
  requestAllowing,
  bodyFrom,
};
