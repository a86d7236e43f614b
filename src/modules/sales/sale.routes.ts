import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppServices } from '../../app-services.ts';
import { errorResponses } from '../../http/schemas.ts';
import { oneOrMany } from '../../http/one-or-many.ts';
import { finishPage, parsePageRequest } from '../../http/pagination.ts';
import { deleteTarget, eitherId, targetFromQuery } from '../../http/request-target.ts';
import { CreateSaleBody, DeleteSaleTarget, RefundSaleBody, SaleSchema, SalesQuery, UpdateSaleBody, UpdateSaleTarget } from './sale.schema.ts';
import { createSale, getSale, getSalePage, refundSale, serializeSale, updateSale, voidSale } from './sale.service.ts';

const sales = oneOrMany(SaleSchema);

export const saleRoutes: FastifyPluginAsyncTypebox<AppServices> = async (app, { db, config }) => {
  app.post(
    '/sales',
    {
      schema: {
        tags: ['Sales'],
        summary: 'Record a sale and the commission it earns',
        body: CreateSaleBody,
        response: { 201: SaleSchema, ...errorResponses(404, 409) },
      },
    },
    async (request, reply) => reply.code(201).send(await createSale(db, request.auth.program, request.body)),
  );

  app.get(
    '/sales',
    {
      schema: {
        tags: ['Sales'],
        summary: 'List sales (newest first; filters affiliateId, affiliateEmail, referralId, saleExternalId), or fetch one by id',
        querystring: SalesQuery,
        response: { 200: sales.schema, ...errorResponses(404) },
      },
    },
    async (request, reply) => {
      const { id, affiliateId, affiliateEmail, referralId, saleExternalId } = request.query;
      const program = request.auth.program;
      const filter = { affiliateId, affiliateEmail, referralId, externalId: saleExternalId };
      if (id !== undefined) return sales.sendOne(reply, await getSale(db, program, { id, ...filter }));
      const page = parsePageRequest(request);
      const rows = finishPage(request, reply, config.siteUrl, await getSalePage(db, program, filter, page), page);
      return sales.sendMany(reply, rows.map((row) => serializeSale(row, program)));
    },
  );

  app.put(
    '/sales',
    {
      schema: {
        tags: ['Sales'],
        summary: 'Change a sale found by saleId (or id, in the body or the query): name, email, totalEarned or commissionRate (commission and counters follow)',
        querystring: UpdateSaleTarget,
        body: UpdateSaleBody,
        response: { 200: SaleSchema, ...errorResponses(404) },
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
        summary: 'Void a sale (id or saleId in the query or a JSON body): it leaves every list and counter; 200 with the sale as it was',
        querystring: DeleteSaleTarget,
        response: { 200: SaleSchema, ...errorResponses(404) },
      },
    },
    async (request) => voidSale(db, request.auth.program, eitherId<number>(deleteTarget(DeleteSaleTarget, request), 'saleId', 'id')),
  );

  app.post(
    '/sales/refund',
    {
      schema: {
        tags: ['Sales'],
        summary: 'Refund a sale (by saleId or externalInvoiceId) in full or in part; commission is taken back in proportion',
        body: RefundSaleBody,
        response: { 201: SaleSchema, ...errorResponses(404) },
      },
    },
    async (request, reply) => reply.code(201).send(await refundSale(db, request.auth.program, request.body)),
  );
};
