import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import { assertCleanInput } from '../http/input-guard.ts';
import cookie from '@fastify/cookie';
import formbody from '@fastify/formbody';
import staticFiles from '@fastify/static';
import type { AppServices } from '../app-services.ts';
import { instanceKey } from '../db/instance-keys.ts';
import { ApiError } from '../domain/errors.ts';
import { html } from './html.ts';
import { renderPage } from './layout.ts';
import { registerSessions, requireCsrfOnUnsafeMethods } from './session.ts';
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

/** The browser side: accounts, the dashboard and the connect flow, server-rendered. */
export const webRoutes: FastifyPluginAsync<AppServices> = async (app, services) => {
  await app.register(cookie);
  await app.register(formbody, { bodyLimit: 64 * 1024 });
  await app.register(staticFiles, { root: fileURLToPath(new URL('./assets/', import.meta.url)), prefix: '/assets/', decorateReply: false });
  refuseControlCharacters(app);
  // Anonymous CSRF cookies are signed with a key every process shares, read once here.
  registerSessions(app, services.db, services.clock, await instanceKey(services.db, 'csrf'));
  requireCsrfOnUnsafeMethods(app);

  app.setErrorHandler((error: Error & { statusCode?: number }, request, reply) => {
    const status = error instanceof ApiError ? error.status : error.statusCode && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 500;
    if (status >= 500) request.log.error({ err: error }, 'page failed');
    const text = status >= 500 ? `Something went wrong. Reference: ${request.id}` : error.message;
    return reply
      .code(status)
      .type('text/html; charset=utf-8')
      .send(renderPage({ title: 'Error', session: request.session, body: html`<div class="card narrow"><h1>${status === 429 ? 'Slow down' : 'Something is not right'}</h1><p>${text}</p><p><a href="/">Back to Tandem</a></p></div>` }));
  });

  await app.register(accountRoutes, services);
  await app.register(connectRoutes, services);
  await app.register(dashboardRoutes, services);
  await app.register(portalRoutes, services);
};
