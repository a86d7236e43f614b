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
        summary: 'Create a promotional code',
        description: 'A code on a coupon, assigned to the affiliate it credits (`affiliateId` or `affiliateEmail`), with optional restrictions; the string is generated when `code` is absent.',
        body: CreatePromotionalCodeBody,
        response: { 201: PromotionalCodeSchema, ...errorResponses(['not_found', 'no such coupon or affiliate in the program'], ['conflict', 'the code string (ignoring case), or its externalId, is already used in the program']) },
      },
    },
    async (request, reply) => reply.code(201).send(await createPromotionalCode(db, request.auth.program, request.body)),
  );

  app.get(
    '/promotional-codes',
    {
      schema: {
        tags: ['Promotional codes'],
        summary: 'List promotional codes, or get one',
        description: 'With `id`, `code` (ignoring case) or `externalId`: that one code, or 404. Otherwise a list, newest first, filtered by `couponId`, `affiliateId` or `affiliateEmail`.',
        querystring: PromotionalCodesQuery,
        response: { 200: codes.schema, ...errorResponses('not_found') },
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
      return codes.sendMany(reply, finishPage(request, reply, config.siteUrl, await getPromotionalCodePage(db, program, query, page)));
    },
  );

  app.put(
    '/promotional-codes',
    {
      schema: {
        tags: ['Promotional codes'],
        summary: 'Change a promotional code',
        description: 'The code is found by `promotionalCodeId`, in the body or the query (`code` in the body is the new string). Its coupon cannot change.',
        querystring: UpdatePromotionalCodeTarget,
        body: UpdatePromotionalCodeBody,
        response: { 200: PromotionalCodeSchema, ...errorResponses('not_found', ['conflict', 'the new code string, or the externalId, is already used in the program']) },
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
        summary: 'Generate promotional codes',
        description: '1 to 1000 codes on a coupon, each `prefix` + a random part, all with the same assignment and restrictions; 201 with the array.',
        body: BulkCreatePromotionalCodesBody,
        response: { 201: Type.Array(PromotionalCodeSchema), ...errorResponses(['not_found', 'no such coupon or affiliate in the program']) },
      },
    },
    async (request, reply) => reply.code(201).send(await bulkCreatePromotionalCodes(db, request.auth.program, request.body)),
  );

  app.delete(
    '/promotional-codes',
    {
      schema: {
        tags: ['Promotional codes'],
        summary: 'Delete a promotional code',
        description: 'The code by `id` (or `promotionalCodeId`) or `code`, in the query or a JSON body; `force=true` when it was redeemed.',
        querystring: DeletePromotionalCodeTarget,
        response: { 200: PromotionalCodeSchema, ...errorResponses('not_found', 'has_dependents') },
      },
    },
    async (request) => {
      const target = deleteTarget(DeletePromotionalCodeTarget, request);
      return deletePromotionalCode(db, request.auth.program, { ...target, id: eitherId<string>(target, 'id', 'promotionalCodeId', { optional: true }) });
    },
  );
};
