import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppServices } from '../../app-services.ts';
import { errorResponses } from '../../http/schemas.ts';
import { PROMO_CODE_REFUSALS } from '../../http/problem-responses.ts';
import { oneOrMany } from '../../http/one-or-many.ts';
import { finishPage, parsePageRequest } from '../../http/pagination.ts';
import { deleteTarget, eitherId, targetFromQuery } from '../../http/request-target.ts';
import { CreateReferralBody, DeleteReferralTarget, ReferralSchema, ReferralsQuery, UpdateReferralBody, UpdateReferralTarget } from './referral.schema.ts';
import { createReferral, deleteReferral, getReferral, getReferralPage, updateReferral } from './referral.service.ts';

const referrals = oneOrMany(ReferralSchema);

export const referralRoutes: FastifyPluginAsyncTypebox<AppServices> = async (app, { db, config, referralMade }) => {
  app.post(
    '/referrals',
    {
      schema: {
        tags: ['Referrals'],
        summary: 'Record a referral',
        description: 'A referred user (your customer), credited to an affiliate by `affiliateId` (an affiliate id or a link string, as `window.tandem.referral` gives it), `affiliateEmail` or `promoCode` (which redeems the code).',
        body: CreateReferralBody,
        response: { 201: ReferralSchema, ...errorResponses(['not_found', 'no affiliate, link or promotional code matches'], ['conflict', 'a referral with this e-mail already exists in the program'], 'duplicate_referral', 'affiliate_inactive', ...PROMO_CODE_REFUSALS) },
      },
    },
    async (request, reply) => reply.code(201).send(await createReferral(db, request.auth.program, request.body, { referralMade })),
  );

  app.get(
    '/referrals',
    {
      schema: {
        tags: ['Referrals'],
        summary: 'List referrals, or get one',
        description: 'With `id`: that one referral, or 404. Otherwise a list, newest first, filtered by `affiliateId`, `affiliateEmail` or `externalId` (the `referredUserExternalId`).',
        querystring: ReferralsQuery,
        response: { 200: referrals.schema, ...errorResponses('not_found') },
      },
    },
    async (request, reply) => {
      const { id, affiliateId, affiliateEmail, externalId } = request.query;
      const program = request.auth.program;
      const filter = { affiliateId, affiliateEmail, externalId };
      if (id !== undefined) return referrals.sendOne(reply, await getReferral(db, program, { id, ...filter }));
      const page = parsePageRequest(request);
      return referrals.sendMany(reply, finishPage(request, reply, config.siteUrl, await getReferralPage(db, program, filter, page)));
    },
  );

  app.put(
    '/referrals',
    {
      schema: {
        tags: ['Referrals'],
        summary: 'Change a referral',
        description: 'The referral is found by `referralId` (or `id`), in the body or the query. Changes `name`, `email`, `referredUserExternalId`, `plan` or `status`.',
        querystring: UpdateReferralTarget,
        body: UpdateReferralBody,
        response: { 200: ReferralSchema, ...errorResponses('not_found', ['conflict', 'another referral has this e-mail'], 'duplicate_referral') },
      },
      preValidation: targetFromQuery(UpdateReferralTarget),
    },
    async (request) => updateReferral(db, request.auth.program, eitherId<string>(request.body, 'referralId', 'id'), request.body, referralMade),
  );

  app.delete(
    '/referrals',
    {
      schema: {
        tags: ['Referrals'],
        summary: 'Delete a referral',
        description: 'The referral by `id` or `referralId`, in the query or a JSON body. One with sales needs `force=true`, which voids them.',
        querystring: DeleteReferralTarget,
        response: { 200: ReferralSchema, ...errorResponses('not_found', 'has_dependents') },
      },
    },
    async (request) => {
      const target = deleteTarget(DeleteReferralTarget, request);
      return deleteReferral(db, request.auth.program, eitherId<string>(target, 'referralId', 'id'), target);
    },
  );
};
