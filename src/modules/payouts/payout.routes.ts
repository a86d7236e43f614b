import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppServices } from '../../app-services.ts';
import { errorResponses } from '../../http/schemas.ts';
import { finishPage, parsePageRequest } from '../../http/pagination.ts';
import { PayoutExportQuery, PayoutSchema, PayoutsQuery, RunPayoutsBody, UpdatePayoutBody } from './payout.schema.ts';
import { getPayoutPage, runPayouts, serializePayout, updatePayout } from './payout.service.ts';
import { EXPORT_ROW_LIMITS, exportPayouts, type ExportFormat } from './payout-export.ts';
import type { PayoutRow } from './payout.repository.ts';

export const payoutRoutes: FastifyPluginAsyncTypebox<AppServices> = async (app, { db, config }) => {
  app.post(
    '/payouts',
    {
      schema: {
        tags: ['Payouts'],
        summary: 'Run payouts: one pending payout per affiliate whose due balance is positive and at least the minimum (all, or one affiliateId)',
        body: Type.Optional(RunPayoutsBody),
        response: { 201: Type.Array(PayoutSchema), ...errorResponses(404) },
      },
    },
    async (request, reply) => reply.code(201).send(await runPayouts(db, request.auth.program, request.body ?? {})),
  );

  app.get(
    '/payouts',
    {
      schema: {
        tags: ['Payouts'],
        summary: 'List payouts (newest first; filters affiliateId, status, createdAfter)',
        querystring: PayoutsQuery,
        response: { 200: Type.Array(PayoutSchema), ...errorResponses() },
      },
    },
    async (request, reply) => {
      const { affiliateId, status } = request.query;
      const page = parsePageRequest(request);
      const rows = finishPage(request, reply, config.siteUrl, await getPayoutPage(db, request.auth.program, { affiliateId, status: status as PayoutRow['status'] | undefined }, page), page);
      return rows.map(serializePayout);
    },
  );

  app.put(
    '/payouts',
    {
      schema: {
        tags: ['Payouts'],
        summary: 'Mark a pending payout paid (its entries are paid) or failed (its entries are due again); final after that (409)',
        body: UpdatePayoutBody,
        response: { 200: PayoutSchema, ...errorResponses(404, 409) },
      },
    },
    async (request) => updatePayout(db, request.auth.program, request.body),
  );

  app.get(
    '/payouts/export',
    {
      schema: {
        tags: ['Payouts'],
        summary: "Payouts as a file to upload: csv (every field), paypal (PayPal Payouts' bulk file) or wise (Wise's batch template); status defaults to pending",
        querystring: PayoutExportQuery,
        response: { 200: Type.String({ description: 'text/csv' }), ...errorResponses() },
      },
    },
    async (request, reply) => {
      const program = request.auth.program;
      const format = request.query.format as ExportFormat;
      const maximum = EXPORT_ROW_LIMITS[format];
      const page = parsePageRequest(request, { limit: Math.min(request.query.limit ?? maximum, maximum), cursor: request.query.cursor });
      const filter = { affiliateId: request.query.affiliateId, status: (request.query.status ?? 'pending') as PayoutRow['status'] };
      const rows = finishPage(request, reply, config.siteUrl, await getPayoutPage(db, program, filter, page), page);
      const day = program.clock().toISOString().slice(0, 10);
      return reply
        .type('text/csv; charset=utf-8')
        .header('content-disposition', `attachment; filename="payouts-${format}-${day}.csv"`)
        .send(exportPayouts(format, rows, program.name));
    },
  );
};
