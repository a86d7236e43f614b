import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppServices } from '../../app-services.ts';
import { errorResponses, Nullable, Uuid, DateTime } from '../../http/schemas.ts';
import { getProgram, serializeProgram } from './program.service.ts';

export const ProgramSchema = Type.Object(
  {
    id: Uuid,
    name: Type.String(),
    domain: Type.String(),
    logoUrl: Nullable(Type.String()),
    currency: Type.String(),
    commissionRate: Type.Number(),
    baseUrls: Type.Array(Type.String()),
    referralParam: Type.String(),
    cookieDays: Type.Integer({ description: 'days the tracking script keeps a referral' }),
    attribution: Type.String({ enum: ['first', 'last'], description: 'which click wins when a visitor comes through several links' }),
    commission: Type.Object(
      {
        type: Type.String({ enum: ['percentage', 'flat'] }),
        rate: Type.Number({ description: 'percent of the sale (type percentage; an affiliate\'s own commissionRate wins)' }),
        amount: Type.Number({ description: 'paid per sale, never more than its total (type flat)' }),
        durationMonths: Nullable(Type.Integer({ description: "only sales within N months of the customer's referral earn; null: forever" })),
        maxSalesPerCustomer: Nullable(Type.Integer({ description: "only a customer's first N sales earn; null: all" })),
        holdDays: Type.Integer({ description: 'days a commission waits for refunds before it can be paid' }),
        minimumPayout: Type.Number({ description: 'the smallest balance a payout run pays' }),
      },
      { title: 'CommissionPlan' },
    ),
    portalUrl: Type.String({ description: "the affiliate portal: sign-up and affiliates' own figures" }),
    portalSignup: Type.String({ enum: ['open', 'approval', 'invite'], description: 'who may sign up at the portal: anyone (open), anyone pending approval (approval), nobody (invite)' }),
    livemode: Type.Boolean({ description: "false for a test key: the program's test side (its own id and data; docs/test-mode.md)" }),
    createdAt: DateTime,
    updatedAt: DateTime,
  },
  { title: 'Program' },
);

export const programRoutes: FastifyPluginAsyncTypebox<AppServices> = async (app, { db, config }) => {
  app.get(
    '/me',
    {
      schema: {
        tags: ['Program'],
        summary: "The token's program",
        description: "The program the bearer token belongs to, with its tracking settings, commission plan and portal: a connection test for automation tools. A test key (`tdm_test_…`) answers the program's test side, with `livemode: false` and the test side's own id.",
        response: { 200: ProgramSchema, ...errorResponses() },
      },
    },
    async (request) => {
      const program = serializeProgram(await getProgram(db, request.auth.program.id));
      return { ...program, portalUrl: `${config.siteUrl}/portal/${program.portal.slug}`, portalSignup: program.portal.signup };
    },
  );
};
