import type { FastifyPluginAsync } from 'fastify';
import type { AppServices } from '../../app-services.ts';
import { isUuid } from '../../domain/ids.ts';
import { ApiError, notFound } from '../../domain/errors.ts';
import { assertCleanInput, assertWellEncodedQuery } from '../../http/input-guard.ts';
import { scopeWritesToProgram } from '../../http/auth.ts';
import { openUserProgram } from '../../modules/programs/program.service.ts';
import { currentUser } from './dashboard-page.ts';
import { programRoutes } from './programs.routes.ts';
import { overviewRoutes } from './overview.routes.ts';
import { affiliateRoutes } from './affiliates.routes.ts';
import { referralRoutes } from './referrals.routes.ts';
import { saleRoutes } from './sales.routes.ts';
import { couponRoutes } from './coupons.routes.ts';
import { apiKeyRoutes } from './keys.routes.ts';
import { connectedAppRoutes } from './apps.routes.ts';
import { settingsRoutes } from './settings.routes.ts';
import { payoutDashboardRoutes } from './payouts.routes.ts';
import { webhookDashboardRoutes } from './webhooks.routes.ts';

// The merchant's dashboard, server-rendered. The checks every page needs run here, as hooks,
// before any handler: a signed-in user, a valid CSRF token on every POST, ids in the path
// that are UUIDs, and a program in the path that belongs to the user (else 404, as if it did
// not exist). Pages then read the user and program from the request.


export const dashboardRoutes: FastifyPluginAsync<AppServices> = async (app, services) => {
  const { db } = services;
  app.decorateRequest('dashboardProgram', null);

  app.addHook('onRequest', async (request, reply) => {
    if (request.session?.user) return;
    // After login the user comes back to the page; a form post cannot be replayed, so its page's program is the way back.
    const next = request.method === 'GET' ? request.url : '/dashboard';
    return reply.redirect(`/login?next=${encodeURIComponent(next)}`, request.method === 'GET' ? 302 : 303);
  });

  // Query strings become list filters and searches that reach the database: one with a broken
  // %-escape, a control character or a lone surrogate is refused whole with a 400 page, as the
  // API refuses it (PostgreSQL rejects NUL in text, which was a 500).
  app.addHook('onRequest', async (request) => {
    assertWellEncodedQuery(request.url);
    try {
      assertCleanInput(request.query);
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      throw new ApiError('bad_request', 'This address holds control characters or broken text in its query string, which no page here accepts.');
    }
  });

  app.addHook('preHandler', async (request) => {
    // Ids in paths are UUIDs; anything else cannot name a row (and PostgreSQL's uuid type would reject it).
    const params = (request.params ?? {}) as Record<string, string>;
    for (const [name, value] of Object.entries(params)) {
      if (!name.endsWith('Id')) continue;
      if (!isUuid(value)) throw notFound('Page');
      params[name] = value.toLowerCase(); // stored lowercase; SQLite compares text exactly
    }
  });

  await app.register(programRoutes, services);

  // Everything under one program: its owner only.
  await app.register(
    async (scope) => {
      scope.addHook('preHandler', async (request) => {
        const { programId } = request.params as { programId: string };
        const found = await openUserProgram(db, currentUser(request).id, programId, services.clock);
        if (!found) throw notFound('Program');
        request.dashboardProgram = { ...found, base: `/dashboard/programs/${found.program.id}` };
      });
      scopeWritesToProgram(scope, (request) => request.dashboardProgram!.program.id);
      for (const routes of [overviewRoutes, affiliateRoutes, referralRoutes, saleRoutes, payoutDashboardRoutes, couponRoutes, apiKeyRoutes, connectedAppRoutes, webhookDashboardRoutes, settingsRoutes]) {
        await scope.register(routes, services);
      }
    },
    { prefix: '/dashboard/programs/:programId' },
  );
};
