import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { assertCleanInput } from '../http/input-guard.ts';
import cookie from '@fastify/cookie';
import formbody from '@fastify/formbody';
import staticFiles from '@fastify/static';
import type { AppServices } from '../app-services.ts';
import { instanceKey } from '../db/instance-keys.ts';
import { ApiError } from '../domain/errors.ts';
import { html } from './html.ts';
import { renderPage } from './layout.ts';
import { ASSETS_DIR } from '../paths.ts';
import { csrfBindingOf, registerSessions } from './session.ts';
import { FormExpired, requireCsrfOnUnsafeMethods } from './csrf.ts';
import { accountRoutes } from './account.routes.ts';
import { connectRoutes } from './connect/connect.routes.ts';
import { dashboardRoutes } from './dashboard/dashboard.ts';
import { portalRoutes } from './portal/portal.routes.ts';

/**
 * Every form body is checked before any route or hook sees it: control characters (NUL and
 * the other C0 codes but tab and line breaks) are refused. Routes read fields through
 * forms.ts (a repeated field's first value) unless they take a list on purpose (event-type
 * checkboxes). The token endpoint keeps its own answers (a code with a control character is
 * just an invalid code).
 * Whatever the body's content type: Fastify parses JSON for every route, and forms.ts reads a
 * JSON body's fields like a form's, so checking form-encoded bodies only let a NUL through to
 * the database (a 500 on PostgreSQL): found by the fuzzer.
 */
function refuseControlCharacters(scope: FastifyInstance): void {
  scope.addHook('preValidation', async (request) => {
    if (request.body !== undefined && !request.url.startsWith('/api/')) assertCleanInput(request.body);
  });
}

const FAVICON = readFileSync(new URL('favicon.svg', ASSETS_DIR));

const PAGE_HEADERS = {
  'cache-control': 'no-store',
  'content-security-policy': "default-src 'self'; img-src 'self' https: data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; base-uri 'none'",
};

/**
 * An error as a page of the site: 404 "Page not found", 500 "Something went wrong" with the
 * request's reference (the log line has it; the page never shows the error itself), and the
 * rest with what went wrong, under `heading` when given. With the visitor's session where the
 * route had one.
 */
export function sendErrorPage(request: FastifyRequest, reply: FastifyReply, status: number, message?: string, heading?: string): FastifyReply {
  const session = request.session ?? null;
  const home = session?.user ? html`<a href="/dashboard">Your programs</a>` : html`<a href="/">Back to Tandem</a>`;
  const [title, body] =
    status === 404
      ? ['Page not found', html`<p>${message ?? html`There is no page at <code>${request.url.split('?')[0]}</code>.`}</p>`]
      : status >= 500
        ? ['Something went wrong', html`<p>This page failed on the server. Try again in a moment; if it keeps failing, report it with this reference: <code>${request.id}</code>.</p>`]
        : [heading ?? (status === 429 ? 'Slow down' : 'Something is not right'), html`<p>${message ?? ''}</p>`];
  return reply
    .code(status)
    .headers(PAGE_HEADERS)
    .type('text/html; charset=utf-8')
    .send(renderPage({ title, session, body: html`<div class="card narrow"><h1>${title}</h1>${body}<p>${home}</p></div>` }));
}

/** The 404 of every path outside /api: a page, not a problem body. */
export function notFoundPage(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  return sendErrorPage(request, reply, 404);
}

/** The browser side: accounts, the dashboard and the connect flow, server-rendered. */
export const webRoutes: FastifyPluginAsync<AppServices> = async (app, services) => {
  await app.register(cookie);
  await app.register(formbody, { bodyLimit: 64 * 1024 });
  await app.register(staticFiles, { root: fileURLToPath(ASSETS_DIR), prefix: '/assets/', decorateReply: false });
  refuseControlCharacters(app);
  // Anonymous CSRF cookies are signed with a key every process shares, read once here.
  registerSessions(app, services.db, services.clock, await instanceKey(services.db, 'csrf'));
  requireCsrfOnUnsafeMethods(app, csrfBindingOf);

  app.setErrorHandler((error: Error & { statusCode?: number }, request, reply) => {
    // A form without its CSRF token (csrf.ts): nothing was changed.
    if (error instanceof FormExpired) return sendErrorPage(request, reply, error.statusCode, error.message, 'This form has expired');
    const status = error instanceof ApiError ? error.status : error.statusCode && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 500;
    if (status >= 500) request.log.error({ err: error }, 'page failed');
    return sendErrorPage(request, reply, status, status >= 500 ? undefined : error.message);
  });
  // Unknown paths under /dashboard get the page with the visitor's session (its header and
  // programs); every other path outside /api gets notFoundPage from the root (app.ts).
  await app.register(async (dashboard) => dashboard.setNotFoundHandler(notFoundPage), { prefix: '/dashboard' });
  // Browsers ask for /favicon.ico on pages that name no icon (the API docs, a JSON answer).
  app.get('/favicon.ico', { schema: { hide: true } }, async (_request, reply) =>
    reply.type('image/svg+xml').header('cache-control', 'public, max-age=86400').send(FAVICON),
  );

  await app.register(accountRoutes, services);
  await app.register(connectRoutes, services);
  await app.register(dashboardRoutes, services);
  await app.register(portalRoutes, services);
};
