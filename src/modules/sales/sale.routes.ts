import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppServices } from '../../app-services.ts';
import { errorResponses } from '../../http/schemas.ts';
import { oneOrMany } from '../../http/one-or-many.ts';
import { finishPage, parsePageRequest } from '../../http/pagination.ts';
import { CreateSaleBody, SaleSchema, SalesQuery } from './sale.schema.ts';
import { createSale, getSale, getSalePage, serializeSale } from './sale.service.ts';

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
        summary: 'List sales (newest first), or fetch one by id',
        querystring: SalesQuery,
        response: { 200: sales.schema, ...errorResponses(404) },
      },
    },
    async (request, reply) => {
      const { id, affiliateId, referralId } = request.query;
      const program = request.auth.program;
      if (id !== undefined) return sales.sendOne(reply, await getSale(db, program, { id, affiliateId, referralId }));
      const page = parsePageRequest(request.query);
      const rows = finishPage(request, reply, config.siteUrl, await getSalePage(db, program, { affiliateId, referralId }, page), page);
      return sales.sendMany(reply, rows.map((row) => serializeSale(row, program)));
    },
  );
};
