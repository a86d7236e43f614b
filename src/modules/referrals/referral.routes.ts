import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppServices } from '../../app-services.ts';
import { errorResponses } from '../../http/schemas.ts';
import { oneOrMany } from '../../http/one-or-many.ts';
import { finishPage, parsePageRequest } from '../../http/pagination.ts';
import { CreateReferralBody, ReferralSchema, ReferralsQuery } from './referral.schema.ts';
import { createReferral, getReferral, getReferralPage, serializeReferral } from './referral.service.ts';

const referrals = oneOrMany(ReferralSchema);

export const referralRoutes: FastifyPluginAsyncTypebox<AppServices> = async (app, { db, config }) => {
  app.post(
    '/referrals',
    {
      schema: {
        tags: ['Referrals'],
        summary: 'Record a referred user, credited by affiliate id, link, affiliate e-mail or promotional code',
        body: CreateReferralBody,
        response: { 201: ReferralSchema, ...errorResponses(404, 409) },
      },
    },
    async (request, reply) => reply.code(201).send(await createReferral(db, request.auth.program, request.body)),
  );

  app.get(
    '/referrals',
    {
      schema: {
        tags: ['Referrals'],
        summary: 'List referrals (newest first), or fetch one by id',
        querystring: ReferralsQuery,
        response: { 200: referrals.schema, ...errorResponses(404) },
      },
    },
    async (request, reply) => {
      const { id, affiliateId } = request.query;
      const program = request.auth.program;
      if (id !== undefined) return referrals.sendOne(reply, await getReferral(db, program, { id, affiliateId }));
      const page = parsePageRequest(request.query);
      const rows = finishPage(request, reply, config.siteUrl, await getReferralPage(db, program, { affiliateId }, page), page);
      return referrals.sendMany(reply, rows.map(serializeReferral));
    },
  );
};
