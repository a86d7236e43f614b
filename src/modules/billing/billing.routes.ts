import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import rateLimit from '@fastify/rate-limit';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppServices } from '../../app-services.ts';
import { isUuid } from '../../domain/ids.ts';
import { ApiError, notFound } from '../../domain/errors.ts';
import { DateTime, errorResponses, ListQuery, Nullable, Uuid } from '../../http/schemas.ts';
import { finishPage, parsePageRequest } from '../../http/pagination.ts';
import { getProgram, openTestSide, toProgramContext } from '../programs/program.service.ts';
import { getBillingEventPage, recordBillingEvent, verifyBillingEvent } from './billing.service.ts';
import type { BillingProvider } from './billing-provider.ts';
import { BILLING_PROVIDERS } from './providers/index.ts';

export const BillingEventSchema = Type.Object(
  {
    id: Type.String({ description: "the provider's event id (Stripe and Paddle evt_…, Polar's webhook-id, Chargebee ev_…; Lemon Squeezy numbers none: its event, resource and refunded total)" }),
    provider: Type.String({ enum: BILLING_PROVIDERS.map((provider) => provider.name) }),
    type: Type.String(),
    receivedAt: DateTime,
    outcome: Type.String({ enum: ['recorded', 'waiting', 'ignored'] }),
    reason: Nullable(Type.String()),
    referralId: Nullable(Type.String()),
    saleId: Nullable(Type.Integer()),
  },
  { title: 'BillingEvent' },
);

/** GET /api/v1/billing-events: every verified event, newest first, with what came of it. */
export const billingEventRoutes: FastifyPluginAsyncTypebox<AppServices> = async (app, { db, config }) => {
  app.get(
    '/billing-events',
    {
      schema: {
        tags: ['Billing'],
        summary: 'List billing events',
        description: 'Every verified event received from a billing provider (Stripe, Paddle, Lemon Squeezy, Polar, Chargebee), newest first, with its provider, its outcome (`recorded`, `waiting`, `ignored`), the reason in words, and the referral or sale it made or matched.',
        querystring: Type.Object({ ...ListQuery }),
        response: { 200: Type.Array(BillingEventSchema), ...errorResponses() },
      },
    },
    async (request, reply) => {
      const page = parsePageRequest(request);
      return finishPage(request, reply, config.siteUrl, await getBillingEventPage(db, request.auth.program, page));
    },
  );
};

/**
 * The reference of a provider's receiver (docs only: the route reads the raw body for the
 * signature, so a body schema would break it), from what its module says of its wire.
 */
function webhookDocs(provider: BillingProvider) {
  const name = provider.displayName;
  return {
    tags: ['Billing'],
    summary: `Receive a ${name} event (${name}'s webhook)`,
    description: `Where a ${name} webhook of the program posts its events (docs/billing.md). No bearer token: the credential is ${Object.keys(provider.setup.headers).map((h) => `\`${h}\``).join(', ')}, checked against the secret the program saved for ${name}. Customers the checkout credits become referrals, payments sales (net of tax), refunds refunds. Every value it stores goes through the API's input rules: a customer's name is cleaned, anything else refused ignores the event with the reason. An event is processed once: a redelivery answers 200 with \`duplicate: true\` and records nothing.`,
    params: Type.Object({ programId: Uuid }),
    headers: Type.Object(Object.fromEntries(Object.entries(provider.setup.headers).map(([header, words]) => [header, Type.String({ description: words })]))),
    body: Type.Object({}, { description: `A ${name} event, exactly as ${name} sends it (the signature covers the raw bytes).`, examples: [provider.setup.example] }),
    response: {
      200: Type.Object(
        { received: Type.Boolean(), duplicate: Type.Boolean({ description: 'the event was already processed: nothing new was recorded' }) },
        { description: 'The event was verified and handled (or ignored, with the reason kept: GET /api/v1/billing-events).', examples: [{ received: true, duplicate: false }] },
      ),
      ...errorResponses(
        ['bad_request', `the credential is missing or does not match the program's ${name} secret (within 5 minutes where ${name} signs a time); or ${name} is not connected to the program; or the event is no JSON object, or its id or type is not 1 to 200 characters of text without control characters. Nothing is recorded`],
        ['not_found', 'no program with this id'],
        'payload_too_large',
        ['rate_limited', `over the program's limit of verified ${name} events per minute (\`RATE_LIMIT_PER_MINUTE\`, counted apart from its API requests); nothing is recorded, \`Retry-After\` says when to retry, and ${name} retries by itself`],
      ),
    },
  };
}

/**
 * The billing providers' receivers, `/api/billing/{provider}/{programId}`, one handler for all
 * (billing.service.ts): no bearer token (the provider's signature is the credential), the raw
 * body kept for the signature check. Each program may send RATE_LIMIT_PER_MINUTE verified events
 * a minute per provider (counted per process, apart from its API requests); past it the event is
 * answered 429 with Retry-After and recorded nothing, and the provider sends it again later.
 */
export const billingWebhookRoutes: FastifyPluginAsync<AppServices> = async (app, { db, clock, config }) => {
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
  const admit = await limitEventsPerProgram(app, config.rateLimitPerMinute);
  const receive = (provider: BillingProvider) => async (request: FastifyRequest, reply: FastifyReply) => {
    const { programId } = request.params as { programId: string };
    if (!isUuid(programId)) throw notFound('Program');
    const program = toProgramContext(await getProgram(db, programId.toLowerCase()), clock);
    const rawBody = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    const { envelope, mode, mismatch } = await verifyBillingEvent(db, program, provider, { rawBody, headers: request.headers });
    // Counted once verified: a request without the program's secret spends nothing of its limit.
    await admit(request, reply, provider, program.id);
    // The secret's side decides where the event goes: a test secret's events to the test side only.
    const side = mode === 'test' ? toProgramContext(await openTestSide(db, program.id, clock), clock) : program;
    const connection = { programId: program.id, mode };
    // An event that says the other side than its secret is refused — applied to neither side —
    // and listed on the secret's side with the reason (answered 200 like every event handled, so
    // the provider does not retry what can never apply).
    const refused = mismatch === undefined ? undefined : `refused: a ${mismatch} event signed with the program's ${mode} secret belongs to neither side (save the ${mismatch} secret for ${mismatch} events)`;
    return reply.send(await recordBillingEvent(db, side, provider, envelope, connection, refused));
  };
  for (const provider of BILLING_PROVIDERS) app.post(`/api/billing/${provider.name}/:programId`, { config: { docs: webhookDocs(provider) } }, receive(provider));
};

/**
 * The per-program count of verified events (@fastify/rate-limit's store, keyed by the program,
 * so one program's flood never touches another's count): a function that throws a 429 with
 * Retry-After once the program is over `perMinute`; `0` turns it off.
 */
async function limitEventsPerProgram(app: FastifyInstance, perMinute: number): Promise<(request: FastifyRequest, reply: FastifyReply, provider: BillingProvider, programId: string) => Promise<void>> {
  if (perMinute === 0) return async () => {};
  await app.register(rateLimit, { global: false });
  // One count per provider, keyed by the program: a program's Stripe events never spend its Paddle ones.
  const counters = new Map(
    BILLING_PROVIDERS.map((provider) => [
      provider.name,
      app.createRateLimit({ max: perMinute, timeWindow: 60_000, keyGenerator: (request) => `${provider.name}:${(request.params as { programId: string }).programId.toLowerCase()}` }),
    ]),
  );
  return async (request, reply, provider, programId) => {
    const counted = await counters.get(provider.name)!(request);
    if (counted.isAllowed || !counted.isExceeded) return;
    reply.header('retry-after', String(counted.ttlInSeconds));
    throw new ApiError(
      'rate_limited',
      `Program ${programId} is over its ${perMinute} ${provider.displayName} events per minute; nothing was recorded. Retry in ${counted.ttlInSeconds} s (${provider.displayName} retries by itself).`,
    );
  };
}
