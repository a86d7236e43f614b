import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppServices } from '../../app-services.ts';
import { errorResponses } from '../../http/schemas.ts';
import { oneOrMany } from '../../http/one-or-many.ts';
import { finishPage, parsePageRequest } from '../../http/pagination.ts';
import { deleteTarget, targetFromQuery } from '../../http/request-target.ts';
import { AffiliateSchema, AffiliatesQuery, ApiUpdateAffiliateBody, CreateAffiliateBody, DeleteAffiliateTarget, UpdateAffiliateTarget, type Affiliate } from './affiliate.schema.ts';
import { createAffiliate, deleteAffiliate, getAffiliate, getAffiliatePage, updateAffiliate } from './affiliate.service.ts';
import type { Db } from '../../db/transaction.ts';
import type { ProgramContext } from '../../domain/program-context.ts';
import { invalidField } from '../../domain/errors.ts';
import { eitherId } from '../../http/request-target.ts';

const affiliates = oneOrMany(AffiliateSchema);

export const affiliateRoutes: FastifyPluginAsyncTypebox<AppServices> = async (app, { db, config }) => {
  app.post(
    '/affiliates',
    {
      schema: {
        tags: ['Affiliates'],
        summary: 'Create an affiliate',
        description: 'Creates an affiliate with its own link (`affiliateLink`, or generated), approved and active unless `status` says otherwise.',
        body: CreateAffiliateBody,
        response: { 201: AffiliateSchema, ...errorResponses(['conflict', 'an affiliate with this e-mail, or this link string, already exists in the program']) },
      },
    },
    async (request, reply) => reply.code(201).send(await createAffiliate(db, request.auth.program, request.body)),
  );

  app.get(
    '/affiliates',
    {
      schema: {
        tags: ['Affiliates'],
        summary: 'List affiliates, or get one',
        description: 'With `id` or `email`: that one affiliate, or 404. Otherwise a list, newest first (`limit`, `cursor` from the `Link: rel="next"` header, `createdAfter`).',
        querystring: AffiliatesQuery,
        response: { 200: affiliates.schema, ...errorResponses('not_found') },
      },
    },
    async (request, reply) => {
      const { id, email } = request.query;
      const program = request.auth.program;
      if (id !== undefined || email !== undefined) return affiliates.sendOne(reply, await getAffiliate(db, program, { id, email }));
      const page = parsePageRequest(request);
      return affiliates.sendMany(reply, finishPage(request, reply, config.siteUrl, await getAffiliatePage(db, program, page)));
    },
  );

  app.put(
    '/affiliates',
    {
      schema: {
        tags: ['Affiliates'],
        summary: 'Change an affiliate',
        description: 'The affiliate is found by `id` or `affiliateId`, in the body or the query. Changes names, `email`, its own link (`affiliateLink`), `commissionRate`, `payoutEmail`, `paymentMethod`, `status` (`"ACTIVE"`/`"INACTIVE"` too, or `affiliateStatus`) or a portal sign-up\'s `approval`; absent fields stay as they are.',
        querystring: UpdateAffiliateTarget,
        body: ApiUpdateAffiliateBody,
        response: { 200: AffiliateSchema, ...errorResponses('not_found', ['conflict', 'another affiliate has this e-mail, or the link string is taken']) },
      },
      preValidation: targetFromQuery(UpdateAffiliateTarget),
    },
    async (request) => updateAffiliateFromApi(db, request.auth.program, request.body),
  );

  app.delete(
    '/affiliates',
    {
      schema: {
        tags: ['Affiliates'],
        summary: 'Delete an affiliate',
        description: 'The affiliate by `id` or `affiliateId`, in the query or a JSON body; 200 with the affiliate as it was. One with referrals, sales or promotional codes needs `force=true` (its referrals and sales are deleted, its codes unassigned).',
        querystring: DeleteAffiliateTarget,
        response: { 200: AffiliateSchema, ...errorResponses('not_found', 'has_dependents') },
      },
    },
    async (request) => {
      const target = deleteTarget(DeleteAffiliateTarget, request);
      return deleteAffiliate(db, request.auth.program, eitherId<string>(target, 'id', 'affiliateId'), target);
    },
  );
};

/** PUT /affiliates as the SDKs send it: the id in the body, `affiliateStatus` for `status`. */
export function updateAffiliateFromApi(db: Db, program: ProgramContext, body: ApiUpdateAffiliateBody): Promise<Affiliate> {
  const target = eitherId<string>(body, 'id', 'affiliateId');
  const { id: _id, affiliateId: _affiliateId, affiliateStatus, ...changes } = body;
  if (affiliateStatus !== undefined && changes.status !== undefined && affiliateStatus.toLowerCase() !== changes.status.toLowerCase()) {
    throw invalidField('#/affiliateStatus', 'and status differ');
  }
  return updateAffiliate(db, program, target, { ...changes, status: changes.status ?? affiliateStatus });
}
