import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppServices } from '../../app-services.ts';
import { errorResponses } from '../../http/schemas.ts';
import { finishPage, parsePageRequest } from '../../http/pagination.ts';
import { CommissionEntrySchema, CommissionsQuery } from './commission.schema.ts';
import { getEntryPage } from './commission.service.ts';

export const commissionRoutes: FastifyPluginAsyncTypebox<AppServices> = async (app, { db, config }) => {
  app.get(
    '/commissions',
    {
      schema: {
        tags: ['Commissions'],
        summary: 'List commission entries',
        description: 'The commission ledger, newest first, filtered by `affiliateId`, `saleId`, `status` (`pending`, `due`, `paid`) or `payoutId`.',
        querystring: CommissionsQuery,
        response: { 200: Type.Array(CommissionEntrySchema), ...errorResponses() },
      },
    },
    async (request, reply) => {
      const { affiliateId, saleId, status, payoutId } = request.query;
      const program = request.auth.program;
      const now = program.clock();
      const page = parsePageRequest(request);
      return finishPage(request, reply, config.siteUrl, await getEntryPage(db, program, { affiliateId, saleId, status, payoutId }, page, now));
    },
  );
};
