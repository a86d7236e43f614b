import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { AppServices } from '../../app-services.ts';
import type { Db } from '../../db/transaction.ts';
import { assertValidBody } from '../../http/validation.ts';
import { getLedgerBalance } from '../../modules/ledger/commission.service.ts';
import { EXPORT_ROW_LIMITS, exportPayoutPage, type ExportFormat } from '../../modules/payouts/payout-export.ts';
import { UpdatePayoutBody } from '../../modules/payouts/payout.schema.ts';
import { getPayoutPage, runPayouts, updatePayout } from '../../modules/payouts/payout.service.ts';
import { currentProgram, doneFlash, listPage, redirectDone, requestedPage, sendPage } from './dashboard-page.ts';
import { errorFlash, formErrorsOf, noErrors, optionalText, optionalUtcDateTime, readForm, readQuery, type FormErrors, type FormValues } from './forms.ts';
import { payoutBody, payoutListBody, payoutTitle } from './payouts.view.ts';

// Payouts: what the program owes, the run that turns due balances into payouts, the list with
// its marks (paid with date, method and reference, or failed), and the files to upload to
// PayPal or Wise. The same services as POST/GET/PUT /api/v1/payouts. The pages are payouts.view.ts.

const DONE = {
  made: 'Payouts made: pay them, then mark each one paid.',
  none: 'Nothing to pay: no affiliate has a due balance at or above the minimum payout.',
  paid: 'Payout marked paid.',
  failed: 'Payout marked failed: its commission is due again and goes into the next run.',
};

const STATUSES = ['pending', 'paid', 'failed'] as const;
type Status = (typeof STATUSES)[number];

function statusOf(value: string | undefined): Status {
  return (STATUSES as readonly string[]).includes(value ?? '') ? (value as Status) : 'pending';
}

async function listPageOf(db: Db, request: FastifyRequest, reply: FastifyReply) {
  const { context, base, program } = currentProgram(request);
  const status = statusOf(readQuery(request).status);
  const page = requestedPage(request);
  const [found, balance] = await Promise.all([getPayoutPage(db, context, { status }, page), getLedgerBalance(db, context)]);
  const list = listPage(found, page, `${base}/payouts`, { status });
  const body = payoutListBody({ base, session: request.session!, currency: program.currency, plan: context.plan, balance, status, statuses: STATUSES, list });
  return sendPage(db, request, reply, { title: 'Payouts', active: 'payouts', body, flash: doneFlash(request, DONE) });
}

async function payoutPageOf(db: Db, request: FastifyRequest, reply: FastifyReply, values: FormValues = {}, errors: FormErrors = noErrors) {
  const { context, base } = currentProgram(request);
  const { payoutId } = request.params as { payoutId: string };
  const [payout] = (await getPayoutPage(db, context, { id: payoutId }, { limit: 1 })).items;
  if (!payout) return reply.callNotFound();
  const body = payoutBody({ base, session: request.session!, payout, values, errors });
  return sendPage(db, request, reply, { title: payoutTitle(payout), active: 'payouts', body, status: errors.status, flash: errorFlash(errors) ?? doneFlash(request, DONE) });
}

export const payoutDashboardRoutes: FastifyPluginAsync<AppServices> = async (app, { db }) => {
  app.get('/payouts', (request, reply) => listPageOf(db, request, reply));

  app.post('/payouts/run', async (request, reply) => {
    const { context, base } = currentProgram(request);
    const made = await runPayouts(db, context, {});
    return redirectDone(reply, `${base}/payouts`, made.length > 0 ? 'made' : 'none');
  });

  app.get('/payouts/export', async (request, reply) => {
    const { context } = currentProgram(request);
    const format = readQuery(request).format as ExportFormat;
    if (!(format in EXPORT_ROW_LIMITS)) return reply.callNotFound();
    // One file holds at most the provider's rows (the oldest payouts wait for the next file, once these are marked).
    const { file } = await exportPayoutPage(db, context, format, { status: 'pending' }, { limit: EXPORT_ROW_LIMITS[format] });
    const day = context.clock().toISOString().slice(0, 10);
    return reply
      .type('text/csv; charset=utf-8')
      .header('content-disposition', `attachment; filename="payouts-${format}-${day}.csv"`)
      .send(file);
  });

  app.get('/payouts/:payoutId', (request, reply) => payoutPageOf(db, request, reply));

  app.post('/payouts/:payoutId', async (request, reply) => {
    const { context, base } = currentProgram(request);
    const { payoutId } = request.params as { payoutId: string };
    const form = readForm(request);
    try {
      const changes = {
        payoutId,
        status: form.status ?? '',
        ...(optionalUtcDateTime(form.paidAt) === undefined || form.status !== 'paid' ? {} : { paidAt: optionalUtcDateTime(form.paidAt) }),
        ...(optionalText(form.method) === undefined ? {} : { method: optionalText(form.method) }),
        ...(optionalText(form.reference) === undefined ? {} : { reference: optionalText(form.reference) }),
      };
      assertValidBody(UpdatePayoutBody, changes);
      const payout = await updatePayout(db, context, changes);
      return redirectDone(reply, `${base}/payouts/${payoutId}`, payout.status);
    } catch (error) {
      return payoutPageOf(db, request, reply, form, formErrorsOf(error));
    }
  });
};
