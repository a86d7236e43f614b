import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppServices } from '../../app-services.ts';
import { errorResponses } from '../../http/schemas.ts';
import { oneOrMany } from '../../http/one-or-many.ts';
import { finishPage, parsePageRequest } from '../../http/pagination.ts';
import { deleteTarget, targetFromQuery } from '../../http/request-target.ts';
import { AffiliateSchema, AffiliatesQuery, ApiUpdateAffiliateBody, CreateAffiliateBody, DeleteAffiliateTarget, UpdateAffiliateTarget, type Affiliate } from './affiliate.schema.ts';
import { createAffiliate, deleteAffiliate, getAffiliate, getAffiliatePage, serializeAffiliate, updateAffiliate } from './affiliate.service.ts';
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
        summary: 'Create an affiliate (with its own link)',
        body: CreateAffiliateBody,
        response: { 201: AffiliateSchema, ...errorResponses(409) },
      },
    },
    async (request, reply) => reply.code(201).send(await createAffiliate(db, request.auth.program, request.body)),
  );

  app.get(
    '/affiliates',
    {
      schema: {
        tags: ['Affiliates'],
        summary: 'List affiliates, or fetch one by id or e-mail',
        querystring: AffiliatesQuery,
        response: { 200: affiliates.schema, ...errorResponses(404) },
      },
    },
    async (request, reply) => {
      const { id, email } = request.query;
      const program = request.auth.program;
      if (id !== undefined || email !== undefined) return affiliates.sendOne(reply, await getAffiliate(db, program, { id, email }));
      const page = parsePageRequest(request);
      const rows = finishPage(request, reply, config.siteUrl, await getAffiliatePage(db, program, page), page);
      return affiliates.sendMany(reply, rows.map((row) => serializeAffiliate(row, program)));
    },
  );

  app.put(
    '/affiliates',
    {
      schema: {
        tags: ['Affiliates'],
        summary: 'Change an affiliate found by id or affiliateId (in the body or the query): names, email, own link, rate, payout e-mail, status ("ACTIVE"/"INACTIVE" too)',
        querystring: UpdateAffiliateTarget,
        body: ApiUpdateAffiliateBody,
        response: { 200: AffiliateSchema, ...errorResponses(404, 409) },
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
        summary: 'Delete an affiliate (id or affiliateId in the query or a JSON body); one with referrals, sales or codes needs force=true',
        querystring: DeleteAffiliateTarget,
        response: { 200: AffiliateSchema, ...errorResponses(404, 409) },
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
