import Fastify, { type FastifyInstance } from 'fastify';
import rateLimit from '@fastify/rate-limit';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Config } from './config.ts';
import { loggerOptions, RequestLogController, TerminalLogController } from './logging.ts';
import type { DatabaseHandle } from './db/database.ts';
import { systemClock } from './domain/clock.ts';
import type { AppOptions, AppServices } from './app-services.ts';
import { requireBearerToken, scopeWritesToProgram } from './http/auth.ts';
import { setSecurityHeaders } from './http/security-headers.ts';
import { supportIdempotencyKeys } from './http/idempotency.ts';
import { answerFrameworkError, registerErrorHandler } from './http/error-handler.ts';
import { answerClientError, newRequestId } from './http/client-errors.ts';
import { ApiError } from './domain/errors.ts';
import { ProblemSchema } from './http/schemas.ts';
import { validatorCompiler } from './http/validation.ts';
import { registerApiDocs } from './http/api-docs.ts';
import { trackingRoutes } from './modules/tracking/tracking.routes.ts';
import { guardApiInput } from './http/input-guard.ts';
import { instanceKey } from './db/instance-keys.ts';
import { healthRoutes } from './http/health.ts';
import { affiliateRoutes } from './modules/affiliates/affiliate.routes.ts';
import { linkRoutes } from './modules/affiliates/link.routes.ts';
import { referralRoutes } from './modules/referrals/referral.routes.ts';
import { saleRoutes } from './modules/sales/sale.routes.ts';
import { couponRoutes } from './modules/coupons/coupon.routes.ts';
import { promotionalCodeRoutes } from './modules/coupons/promotional-code.routes.ts';
import { programRoutes } from './modules/programs/program.routes.ts';
import { webhookRoutes } from './modules/webhooks/webhook.routes.ts';
import { eventRoutes } from './modules/events/event.routes.ts';
import { commissionRoutes } from './modules/ledger/commission.routes.ts';
import { payoutRoutes } from './modules/payouts/payout.routes.ts';
import { portalApiRoutes } from './modules/portal/portal.routes.ts';
import { billingEventRoutes, billingWebhookRoutes } from './modules/billing/billing.routes.ts';
import { settleWaitingInvoicesOfReferral } from './modules/billing/billing.service.ts';
import { notFoundPage, webRoutes } from './web/web.ts';
import { TokenCache } from './modules/tokens/token-cache.ts';
import { onLocalChange, TOKEN_CHANGE_CHANNEL } from './db/change-watch.ts';
import { authenticateToken } from './modules/tokens/token.service.ts';

/**
 * Fastify's own hop count trusts nothing (it cannot check the peer), so a count is a function
 * trusting the first N addresses from the socket inwards, as Express does: right only when the
 * balancer is the sole way in.
 */
function trustProxyOption(trust: Config['trustProxy']): boolean | string[] | ((address: string, hop: number) => boolean) {
  if (trust === false) return false;
  if (typeof trust === 'number') return (_address, hop) => hop < trust;
  return [...trust];
}

/** How often Node checks for late requests: a tenth of the shorter timeout, at most a second. */
function connectionsCheckingInterval(config: Config): number {
  return Math.max(10, Math.min(1000, Math.floor(Math.min(config.requestTimeoutMs, config.headersTimeoutMs) / 10)));
}

export async function buildApp(config: Config, database: DatabaseHandle, options: AppOptions = {}): Promise<FastifyInstance> {
  const app = Fastify({
    logger: loggerOptions(config),
    // One line per request, written when it is answered (src/logging.ts), instead of Fastify's
    // two ("incoming request", "request completed") carrying every header.
    logController: config.logFormat === 'pretty' ? new TerminalLogController() : new RequestLogController(),
    bodyLimit: config.bodyLimit,
    requestIdHeader: false,
    genReqId: newRequestId,
    return503OnClosing: true,
    // request.ip is the client behind a trusted balancer, not the balancer (docs/deploy.md).
    trustProxy: trustProxyOption(config.trustProxy),
    // A request (headers and body) that has not arrived in time gets 408 and its connection is
    // closed, so a client trickling bytes cannot hold a connection (docs/deploy.md#timeouts).
    requestTimeout: config.requestTimeoutMs,
    keepAliveTimeout: config.keepAliveTimeoutMs,
    http: {
      requestTimeout: config.requestTimeoutMs,
      headersTimeout: config.headersTimeoutMs,
      // Node looks for late requests only this often (30 s by default, which could double a 30 s timeout).
      connectionsCheckingInterval: connectionsCheckingInterval(config),
    },
    clientErrorHandler: answerClientError,
    frameworkErrors: answerFrameworkError,
  }).withTypeProvider<TypeBoxTypeProvider>();
  // A referral made through the API or the dashboard settles its customer's waiting Stripe
  // invoices in its transaction: billing sits above referrals, so the app hands it down.
  const services: AppServices = { db: database.db, config, clock: options.clock ?? systemClock, referralMade: settleWaitingInvoicesOfReferral };
  // Token revocations and program changes, made here or by other processes (the CLI, other
  // servers), reach this app's token cache at once (modules/tokens/token-cache.ts).
  let tokenChanges: ReturnType<DatabaseHandle['watchChanges']> | null = null;
  const tokenCache = new TokenCache(config.tokenCacheMs, () => tokenChanges?.trustCache() ?? false);
  const stopHearingLocalChanges = onLocalChange(TOKEN_CHANGE_CHANNEL, () => tokenCache.forget());
  if (config.tokenCacheMs > 0) tokenChanges = database.watchChanges(TOKEN_CHANGE_CHANNEL, () => tokenCache.forget());
  app.addHook('onClose', async () => {
    stopHearingLocalChanges();
    await tokenChanges?.close();
  });
  app.decorate('cursorKey', await instanceKey(database.db, 'cursor'));

  // 1. Framework: validation, errors, security headers, shared schemas, docs.
  app.setValidatorCompiler(validatorCompiler);
  // Unknown paths outside /api are pages of the site: an HTML 404 (web.ts).
  registerErrorHandler(app, { notFoundPage });
  setSecurityHeaders(app, config.siteUrl);
  app.addSchema(ProblemSchema);
  await registerApiDocs(app, config);

  // 2. Operations.
  await app.register(healthRoutes, { database });

  // 3. The JSON API: bearer token, the per-program rate limit, idempotency keys, then resources.
  await app.register(
    async (api) => {
      requireBearerToken(api, (token) => authenticateToken(services.db, token, tokenCache, services.clock));
      // Bodies are JSON only: without Fastify's default text/plain parser a text body is a 400,
      // not a string that fails validation.
      api.removeContentTypeParser('text/plain');
      guardApiInput(api);
      if (config.rateLimitPerMinute > 0) {
        await api.register(rateLimit, {
          max: config.rateLimitPerMinute,
          timeWindow: 60_000,
          // Counted right after authentication (a route-level onRequest hook runs after the
          // bearer-token hook), so every authenticated request counts, invalid ones included.
          hook: 'onRequest',
          // Per program, not per token: minting keys does not multiply the limit.
          keyGenerator: (request) => request.auth.program.id,
          enableDraftSpec: true,
          errorResponseBuilder: (_request, context) =>
            Object.assign(new ApiError('rate_limited', `Rate limit of ${context.max} requests per minute exceeded; retry in ${context.after}.`), {
              statusCode: 429,
            }),
        });
      }
      scopeWritesToProgram(api, (request) => request.auth.program.id);
      supportIdempotencyKeys(api, services.db, config.idempotencyLeaseMs);
      for (const routes of [
        programRoutes,
        affiliateRoutes,
        portalApiRoutes,
        linkRoutes,
        referralRoutes,
        saleRoutes,
        commissionRoutes,
        payoutRoutes,
        billingEventRoutes,
        couponRoutes,
        promotionalCodeRoutes,
        webhookRoutes,
        eventRoutes,
      ]) {
        await api.register(routes, services);
      }
    },
    { prefix: '/api/v1' },
  );

  // 4. Click tracking: the merchant-site script and the endpoint it reports to (no token).
  await app.register(trackingRoutes, services);
  // The billing providers' webhooks for a program (each provider's signature is the credential).
  await app.register(async (billing) => {
    scopeWritesToProgram(billing, (request) => (request.params as { programId: string }).programId);
    await billing.register(billingWebhookRoutes, services);
  });

  // 5. The browser side: accounts, dashboard, connect flow.
  await app.register(webRoutes, services);
  return app;
}
