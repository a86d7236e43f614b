import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppServices } from '../../app-services.ts';
import { errorResponses } from '../../http/schemas.ts';
import { oneOrMany } from '../../http/one-or-many.ts';
import { finishPage, parsePageRequest } from '../../http/pagination.ts';
import { deleteTarget, eitherId, targetFromQuery } from '../../http/request-target.ts';
import {
  BulkCreatePromotionalCodesBody,
  CreatePromotionalCodeBody,
  DeletePromotionalCodeTarget,
  PromotionalCodeSchema,
  PromotionalCodesQuery,
  UpdatePromotionalCodeBody,
  UpdatePromotionalCodeTarget,
} from './promotional-code.schema.ts';
import { serializeCodes } from './promotional-code.serializer.ts';
import {
  bulkCreatePromotionalCodes,
  createPromotionalCode,
  deletePromotionalCode,
  getPromotionalCode,
  getPromotionalCodePage,
  updatePromotionalCode,
} from './promotional-code.service.ts';

const codes = oneOrMany(PromotionalCodeSchema);

export const promotionalCodeRoutes: FastifyPluginAsyncTypebox<AppServices> = async (app, { db, config }) => {
  app.post(
    '/promotional-codes',
    {
      schema: {
        tags: ['Promotional codes'],
        summary: 'Create a promotional code on a coupon (generated when `code` is absent)',
        body: CreatePromotionalCodeBody,
        response: { 201: PromotionalCodeSchema, ...errorResponses(404, 409) },
      },
    },
    async (request, reply) => reply.code(201).send(await createPromotionalCode(db, request.auth.program, request.body)),
  );

  app.get(
    '/promotional-codes',
    {
      schema: {
        tags: ['Promotional codes'],
        summary: 'List promotional codes, or fetch one by id, code or externalId',
        querystring: PromotionalCodesQuery,
        response: { 200: codes.schema, ...errorResponses(404) },
      },
    },
    async (request, reply) => {
      const { id, code, externalId, couponId, affiliateId, affiliateEmail } = request.query;
      const program = request.auth.program;
      const query = { id, code, externalId, couponId, affiliateId, affiliateEmail };
      if (id !== undefined || code !== undefined || externalId !== undefined) {
        return codes.sendOne(reply, await getPromotionalCode(db, program, query));
      }
      const page = parsePageRequest(request);
      const rows = finishPage(request, reply, config.siteUrl, await getPromotionalCodePage(db, program, query, page), page);
      return codes.sendMany(reply, await serializeCodes(db, program, rows));
    },
  );

  app.put(
    '/promotional-codes',
    {
      schema: {
        tags: ['Promotional codes'],
        summary: 'Update a promotional code found by promotionalCodeId (in the body or the query); its coupon cannot change',
        querystring: UpdatePromotionalCodeTarget,
        body: UpdatePromotionalCodeBody,
        response: { 200: PromotionalCodeSchema, ...errorResponses(404, 409) },
      },
      preValidation: targetFromQuery(UpdatePromotionalCodeTarget),
    },
    async (request) => updatePromotionalCode(db, request.auth.program, request.body),
  );

  app.post(
    '/promotional-codes/bulk',
    {
      schema: {
        tags: ['Promotional codes'],
        summary: 'Generate 1 to 1000 codes on a coupon (prefix + random part), with the same restrictions',
        body: BulkCreatePromotionalCodesBody,
        response: { 201: Type.Array(PromotionalCodeSchema), ...errorResponses(404) },
      },
    },
    async (request, reply) => reply.code(201).send(await bulkCreatePromotionalCodes(db, request.auth.program, request.body)),
  );

  app.delete(
    '/promotional-codes',
    {
      schema: {
        tags: ['Promotional codes'],
        summary: 'Delete a promotional code by id or code (query or JSON body); force=true when it was redeemed',
        querystring: DeletePromotionalCodeTarget,
        response: { 200: PromotionalCodeSchema, ...errorResponses(404, 409) },
      },
    },
    async (request) => {
      const target = deleteTarget(DeletePromotionalCodeTarget, request);
      return deletePromotionalCode(db, request.auth.program, { ...target, id: eitherId<string>(target, 'id', 'promotionalCodeId', { optional: true }) });
    },
  );
};
