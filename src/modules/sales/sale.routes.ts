import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppServices } from '../../app-services.ts';
import { errorResponses } from '../../http/schemas.ts';
import { PROMO_CODE_REFUSALS } from '../../http/problem-responses.ts';
import { oneOrMany } from '../../http/one-or-many.ts';
import { finishPage, parsePageRequest } from '../../http/pagination.ts';
import { deleteTarget, eitherId, targetFromQuery } from '../../http/request-target.ts';
import { CreateSaleBody, DeleteSaleTarget, RefundSaleBody, SaleSchema, SalesQuery, UpdateSaleBody, UpdateSaleTarget } from './sale.schema.ts';
import { createSale, getSale, getSalePage, refundSale, updateSale, voidSale } from './sale.service.ts';

const sales = oneOrMany(SaleSchema);

export const saleRoutes: FastifyPluginAsyncTypebox<AppServices> = async (app, { db, config }) => {
  app.post(
    '/sales',
    {
      schema: {
        tags: ['Sales'],
        summary: 'Record a sale',
        description: 'A payment of a referred customer (found by `referralId`, `email` or `promoCode`) and the commission it earns under the program\'s plan. `totalEarned` is in major units of the program\'s currency (49.99). A program records an `externalInvoiceId` once.',
        body: CreateSaleBody,
        response: { 201: SaleSchema, ...errorResponses(['not_found', 'no referral, affiliate, link or promotional code matches'], 'duplicate_sale', 'affiliate_inactive', ...PROMO_CODE_REFUSALS) },
      },
    },
    async (request, reply) => reply.code(201).send(await createSale(db, request.auth.program, request.body)),
  );

  app.get(
    '/sales',
    {
      schema: {
        tags: ['Sales'],
        summary: 'List sales, or get one',
        description: 'With `id`: that one sale, or 404. Otherwise a list, newest first, filtered by `affiliateId`, `affiliateEmail`, `referralId` or `saleExternalId`.',
        querystring: SalesQuery,
        response: { 200: sales.schema, ...errorResponses('not_found') },
      },
    },
    async (request, reply) => {
      const { id, affiliateId, affiliateEmail, referralId, saleExternalId } = request.query;
      const program = request.auth.program;
      const filter = { affiliateId, affiliateEmail, referralId, externalId: saleExternalId };
      if (id !== undefined) return sales.sendOne(reply, await getSale(db, program, { id, ...filter }));
      const page = parsePageRequest(request);
      return sales.sendMany(reply, finishPage(request, reply, config.siteUrl, await getSalePage(db, program, filter, page)));
    },
  );

  app.put(
    '/sales',
    {
      schema: {
        tags: ['Sales'],
        summary: 'Change a sale',
        description: 'The sale is found by `saleId` (or `id`), in the body or the query. Changes `name`, `email`, `totalEarned` or `commissionRate`; the commission and every counter follow.',
        querystring: UpdateSaleTarget,
        body: UpdateSaleBody,
        response: { 200: SaleSchema, ...errorResponses('not_found') },
      },
      preValidation: targetFromQuery(UpdateSaleTarget),
    },
    async (request) => updateSale(db, request.auth.program, eitherId<number>(request.body, 'saleId', 'id'), request.body),
  );

  app.delete(
    '/sales',
    {
      schema: {
        tags: ['Sales'],
        summary: 'Void a sale',
        description: 'The sale by `id` or `saleId`, in the query or a JSON body: it leaves every list and counter; 200 with the sale as it was.',
        querystring: DeleteSaleTarget,
        response: { 200: SaleSchema, ...errorResponses('not_found') },
      },
    },
    async (request) => voidSale(db, request.auth.program, eitherId<number>(deleteTarget(DeleteSaleTarget, request), 'saleId', 'id')),
  );

  app.post(
    '/sales/refund',
    {
      schema: {
        tags: ['Sales'],
        summary: 'Refund a sale',
        description: 'Refunds the sale (by `saleId` or `externalInvoiceId`) in full, or by `amount`; its commission is taken back in proportion. 201 with the sale.',
        body: RefundSaleBody,
        response: { 201: SaleSchema, ...errorResponses('not_found') },
      },
    },
    async (request, reply) => reply.code(201).send(await refundSale(db, request.auth.program, request.body)),
  );
};
