import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppServices } from '../../app-services.ts';
import { errorResponses } from '../../http/schemas.ts';
import { oneOrMany } from '../../http/one-or-many.ts';
import { finishPage, parsePageRequest } from '../../http/pagination.ts';
import { deleteTarget, eitherId, targetFromQuery } from '../../http/request-target.ts';
import { COUPON_CODES_LIMIT, COUPON_PAGE_CODES, CouponSchema } from './promotional-code.schema.ts';
import { CouponsQuery, CreateCouponBody, DeleteCouponTarget, UpdateCouponBody, UpdateCouponTarget } from './coupon.schema.ts';
import { createCoupon, deleteCoupon, getCoupon, getCouponPage, updateCoupon } from './coupon.service.ts';

const coupons = oneOrMany(CouponSchema);

export const couponRoutes: FastifyPluginAsyncTypebox<AppServices> = async (app, { db, config }) => {
  app.post(
    '/coupons',
    {
      schema: {
        tags: ['Coupons'],
        summary: 'Create a coupon',
        description: 'A discount definition (percent or amount off, once, repeating or forever) that promotional codes redeem.',
        body: CreateCouponBody,
        response: { 201: CouponSchema, ...errorResponses(['conflict', 'a coupon with this externalId already exists in the program']) },
      },
    },
    async (request, reply) => reply.code(201).send(await createCoupon(db, request.auth.program, request.body, config.siteUrl)),
  );

  app.get(
    '/coupons',
    {
      schema: {
        tags: ['Coupons'],
        summary: 'List coupons, or get one',
        description: `With \`id\` or \`externalId\`: that one coupon, or 404. Otherwise a list, newest first, filtered by \`name\`. Each coupon carries its ${COUPON_CODES_LIMIT} newest promotional codes, \`promotionalCodesCount\` (all of them) and \`promotionalCodesUrl\` (their list); a page ends early, with its \`Link\`, before the coupon that would take it past ${COUPON_PAGE_CODES} nested codes.`,
        querystring: CouponsQuery,
        response: { 200: coupons.schema, ...errorResponses('not_found') },
      },
    },
    async (request, reply) => {
      const { id, externalId, name } = request.query;
      const program = request.auth.program;
      if (id !== undefined || externalId !== undefined) return coupons.sendOne(reply, await getCoupon(db, program, { id, externalId, name }, config.siteUrl));
      const page = parsePageRequest(request);
      return coupons.sendMany(reply, finishPage(request, reply, config.siteUrl, await getCouponPage(db, program, { name }, page, config.siteUrl)));
    },
  );

  app.put(
    '/coupons',
    {
      schema: {
        tags: ['Coupons'],
        summary: 'Change a coupon',
        description: 'The coupon is found by `id` (or `couponId`), in the body or the query. Its discount terms cannot change.',
        querystring: UpdateCouponTarget,
        body: UpdateCouponBody,
        response: { 200: CouponSchema, ...errorResponses('not_found', ['conflict', 'another coupon has this externalId']) },
      },
      preValidation: targetFromQuery(UpdateCouponTarget),
    },
    // The coupon a PUT or DELETE names: `id`, or `couponId` as PUT /promotional-codes calls it.
    async (request) => updateCoupon(db, request.auth.program, eitherId<string>(request.body, 'id', 'couponId'), request.body, config.siteUrl),
  );

  app.delete(
    '/coupons',
    {
      schema: {
        tags: ['Coupons'],
        summary: 'Delete a coupon',
        description: 'The coupon by `id` (or `couponId`), in the query or a JSON body, with its promotional codes; `force=true` when one of them was redeemed.',
        querystring: DeleteCouponTarget,
        response: { 200: CouponSchema, ...errorResponses('not_found', 'has_dependents') },
      },
    },
    async (request) => {
      const target = deleteTarget(DeleteCouponTarget, request);
      return deleteCoupon(db, request.auth.program, eitherId<string>(target, 'id', 'couponId'), target, config.siteUrl);
    },
  );
};
