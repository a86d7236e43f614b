import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppServices } from '../../app-services.ts';
import { errorResponses } from '../../http/schemas.ts';
import { finishPage, linkNextPage, parsePageRequest } from '../../http/pagination.ts';
import { PayoutExportQuery, PayoutSchema, PayoutsQuery, RunPayoutsBody, UpdatePayoutBody } from './payout.schema.ts';
import { getPayoutPage, runPayouts, updatePayout } from './payout.service.ts';
import { EXPORT_ROW_LIMITS, exportPayoutPage, type ExportFormat } from './payout-export.ts';
import type { PayoutRow } from './payout.repository.ts';

export const payoutRoutes: FastifyPluginAsyncTypebox<AppServices> = async (app, { db, config }) => {
  app.post(
    '/payouts',
    {
      schema: {
        tags: ['Payouts'],
        summary: 'Run payouts',
        description: 'One pending payout per affiliate (all, or `affiliateId`) whose due balance is positive and at least the plan\'s minimum, holding exactly those entries; 201 with the array made, possibly empty. Run again at once, it makes nothing.',
        body: Type.Optional(RunPayoutsBody),
        response: { 201: Type.Array(PayoutSchema), ...errorResponses(['not_found', 'no affiliate with this affiliateId in the program']) },
      },
    },
    async (request, reply) => reply.code(201).send(await runPayouts(db, request.auth.program, request.body ?? {})),
  );

  app.get(
    '/payouts',
    {
      schema: {
        tags: ['Payouts'],
        summary: 'List payouts',
        description: 'Newest first, filtered by `affiliateId` and `status`.',
        querystring: PayoutsQuery,
        response: { 200: Type.Array(PayoutSchema), ...errorResponses() },
      },
    },
    async (request, reply) => {
      const { affiliateId, status } = request.query;
      const page = parsePageRequest(request);
      return finishPage(request, reply, config.siteUrl, await getPayoutPage(db, request.auth.program, { affiliateId, status: status as PayoutRow['status'] | undefined }, page));
    },
  );

  app.put(
    '/payouts',
    {
      schema: {
        tags: ['Payouts'],
        summary: 'Mark a payout paid or failed',
        description: 'A pending payout (`payoutId`) becomes `paid` (its entries are paid; `paidAt`, `method`, `reference`) or `failed` (its entries are due again). Final after that.',
        body: UpdatePayoutBody,
        response: { 200: PayoutSchema, ...errorResponses('not_found', ['conflict', 'the payout is already paid or failed; it never changes again']) },
      },
    },
    async (request) => updatePayout(db, request.auth.program, request.body),
  );

  app.get(
    '/payouts/export',
    {
      schema: {
        tags: ['Payouts'],
        summary: 'Export payouts as a file',
        description: "A CSV file to upload, one row per payout: `csv` (every field), `paypal` (PayPal Payouts' bulk file) or `wise` (Wise's batch template). `status` defaults to `pending`.",
        querystring: PayoutExportQuery,
        response: { 200: { description: 'The file (`Content-Disposition: attachment`).', content: { 'text/csv': { schema: Type.String() } } }, ...errorResponses() },
      },
    },
    async (request, reply) => {
      const program = request.auth.program;
      const format = request.query.format as ExportFormat;
      const maximum = EXPORT_ROW_LIMITS[format];
      const page = parsePageRequest(request, { limit: Math.min(request.query.limit ?? maximum, maximum), cursor: request.query.cursor });
      const filter = { affiliateId: request.query.affiliateId, status: (request.query.status ?? 'pending') as PayoutRow['status'] };
      const { file } = linkNextPage(request, reply, config.siteUrl, await exportPayoutPage(db, program, format, filter, page));
      const day = program.clock().toISOString().slice(0, 10);
      return reply
        .type('text/csv; charset=utf-8')
        .header('content-disposition', `attachment; filename="payouts-${format}-${day}.csv"`)
        .send(file);
    },
  );
};
