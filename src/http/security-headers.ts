import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import helmet, { type HelmetOptions } from 'helmet';

// The headers every answer carries, set by one synchronous hook. Pages (the dashboard, the
// portal, the connect flow, /docs, the HTML error pages) get helmet's set; JSON answers under
// /api and GET /healthz get only what an API answer needs: the request id and nosniff
// (and HSTS on an https site). Frame, referrer, cross-origin and CSP headers mean nothing to a
// client reading JSON, and each costs bytes on every answer.

type Headers = Readonly<Record<string, string>>;

/**
 * Helmet's headers for `options`, worked out once: with the content security policy off (pages
 * set their own) none of them depends on the request, so running helmet per request would
 * only repeat this.
 */
function helmetHeaders(options: HelmetOptions): Headers {
  const headers: Record<string, string> = {};
  const response = {
    setHeader: (name: string, value: string | number | readonly string[]) => void (headers[name.toLowerCase()] = String(value)),
    removeHeader: (name: string) => void delete headers[name.toLowerCase()],
  };
  let finished = false;
  helmet(options)({} as IncomingMessage, response as unknown as ServerResponse, () => (finished = true));
  if (!finished) throw new Error('helmet did not finish synchronously');
  return Object.freeze(headers);
}

/** Whether an answer is the API's (JSON for programs and tools) rather than a page. */
function isApiPath(url: string): boolean {
  return url.startsWith('/api/') || url === '/healthz' || url.startsWith('/healthz?');
}

export function setSecurityHeaders(app: FastifyInstance, siteUrl: string): void {
  // HSTS only where the site is served over https: on plain http it would be ignored, or pin a
  // development host to https.
  const https = siteUrl.startsWith('https:');
  const page = helmetHeaders({
    contentSecurityPolicy: false,
    strictTransportSecurity: https ? { maxAge: 31_536_000, includeSubDomains: true } : false,
  });
  const api: Headers = Object.freeze({
    'x-content-type-options': 'nosniff',
    ...(https ? { 'strict-transport-security': page['strict-transport-security']! } : {}),
  });
  app.addHook('onRequest', (request, reply, done) => {
    reply.headers(isApiPath(request.url) ? api : page);
    reply.header('x-request-id', request.id);
    done();
  });
}
