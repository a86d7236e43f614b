import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppServices } from '../../app-services.ts';
import { isUuid } from '../../domain/ids.ts';
import { notFound } from '../../domain/errors.ts';
import { DateTime, errorResponses, ListQuery, Nullable } from '../../http/schemas.ts';
import { finishPage, parsePageRequest } from '../../http/pagination.ts';
import { getProgram, toProgramContext } from '../programs/program.service.ts';
import { getBillingEventPage, receiveStripeEvent, serializeBillingEvent } from './stripe.service.ts';

export const BillingEventSchema = Type.Object(
  {
    id: Type.String({ description: "the provider's event id (evt_…)" }),
    provider: Type.String({ enum: ['stripe'] }),
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
        summary: 'Events received from Stripe, newest first, each with its outcome (recorded, waiting, ignored) and why',
        querystring: Type.Object({ ...ListQuery }),
        response: { 200: Type.Array(BillingEventSchema), ...errorResponses() },
      },
    },
    async (request, reply) => {
      const page = parsePageRequest(request);
      const rows = finishPage(request, reply, config.siteUrl, await getBillingEventPage(db, request.auth.program, page), page);
      return rows.map(serializeBillingEvent);
    },
  );
};

/**
 * Stripe's webhook endpoint: no bearer token (the Stripe-Signature header is the credential),
 * the raw body kept for the signature check.
 */
export const stripeWebhookRoutes: FastifyPluginAsync<AppServices> = async (app, { db, clock }) => {
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
  app.post('/api/billing/stripe/:programId', async (request, reply) => {
    const { programId } = request.params as { programId: string };
    if (!isUuid(programId)) throw notFound('Program');
    const program = toProgramContext(await getProgram(db, programId.toLowerCase()), clock);
    const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    const signature = request.headers['stripe-signature'];
    return reply.send(await receiveStripeEvent(db, program, raw, typeof signature === 'string' ? signature : undefined));
  });
};
