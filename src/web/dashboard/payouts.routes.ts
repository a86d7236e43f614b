import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { AppServices } from '../../app-services.ts';
import { assertValidBody } from '../../http/validation.ts';
import { getLedgerBalance } from '../../modules/ledger/commission.service.ts';
import { EXPORT_ROW_LIMITS, exportPayoutPage, type ExportFormat } from '../../modules/payouts/payout-export.ts';
import { UpdatePayoutBody, type Payout } from '../../modules/payouts/payout.schema.ts';
import { getPayoutPage, runPayouts, updatePayout } from '../../modules/payouts/payout.service.ts';
import { html, type SafeHtml } from '../html.ts';
import { csrfField } from '../layout.ts';
import { currentProgram, doneFlash, pager, redirectDone, listPage, requestedPage, sendPage } from './dashboard-page.ts';
import { formatAmount, formatMinor, formatTime } from './format.ts';
import { errorFlash, formErrorsOf, noErrors, optionalText, optionalUtcDateTime, readForm, readQuery, selectField, textField, type FormErrors, type FormValues } from './forms.ts';

// Payouts: what the program owes, the run that turns due balances into payouts, the list with
// its marks (paid with date, method and reference, or failed), and the files to upload to
// PayPal or Wise. The same services as POST/GET/PUT /api/v1/payouts.

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

const badge = (status: Payout['status']) => html`<span class="badge ${status === 'paid' ? 'ok' : status === 'failed' ? 'bad' : ''}">${status}</span>`;

/** Payouts as a table (this page, and an affiliate's payout history); the key columns first, for narrow screens. */
export function payoutTable(payouts: Payout[], base: string, withAffiliate: boolean): SafeHtml {
  return html`<div class="table-wrap" role="region" aria-label="Payouts" tabindex="0"><table>
    <thead><tr>${withAffiliate ? html`<th scope="col">Affiliate</th>` : ''}<th scope="col" class="num">Amount</th><th scope="col">Status</th><th scope="col">Made</th><th scope="col">Paid</th><th scope="col" class="num">Entries</th><th scope="col">Method · reference</th></tr></thead>
    <tbody>${payouts.map(
      (p) => html`<tr>
        ${withAffiliate ? html`<td><a href="${base}/affiliates/${p.affiliateId}">${p.affiliate.firstName} ${p.affiliate.lastName}</a><br><span class="muted">${p.affiliate.payoutEmail}</span></td>` : ''}
        <td class="num"><a href="${base}/payouts/${p.id}" aria-label="Payout of ${formatAmount(p.amount, p.currency)} to ${p.affiliate.firstName} ${p.affiliate.lastName}">${formatAmount(p.amount, p.currency)}</a></td>
        <td>${badge(p.status)}</td>
        <td>${formatTime(p.createdAt)}</td>
        <td>${formatTime(p.paidAt)}</td>
        <td class="num">${p.entryCount}</td>
        <td>${[p.method, p.reference].filter(Boolean).join(' · ') || '—'}</td>
      </tr>`,
    )}</tbody>
  </table></div>`;
}

export const payoutDashboardRoutes: FastifyPluginAsync<AppServices> = async (app, { db }) => {
  app.get('/payouts', async (request, reply) => {
    const { context, base, program } = currentProgram(request);
    const query = readQuery(request);
    const status = statusOf(query.status);
    const page = requestedPage(request);
    const [found, balance] = await Promise.all([getPayoutPage(db, context, { status }, page), getLedgerBalance(db, context)]);
    const list = listPage(found, page, `${base}/payouts`, { status });
    const payouts = list.items;
    const money = (amount: number) => formatAmount(amount, program.currency);
    const plan = context.plan;
    const body = html`
      <div class="page-head"><h1>Payouts</h1>
        <form method="post" action="${base}/payouts/run" class="inline">${csrfField(request.session!)}<button type="submit">Run payouts</button></form>
      </div>
      <section class="card" aria-labelledby="owed"><h2 id="owed">What the program owes</h2>
        <dl class="details">
          <dt>In the hold</dt><dd data-stat="pending">${money(balance.pending)} <span class="muted">(${plan.holdDays} days for refunds before a commission can be paid)</span></dd>
          <dt>Due, not in a payout</dt><dd data-stat="due-open">${money(balance.dueOutsidePayouts)} <span class="muted">(the next run pays each affiliate's positive balance of at least ${formatMinor(plan.minimumPayout, program.currency)}; a negative one is carried)</span></dd>
          <dt>In pending payouts</dt><dd data-stat="in-payouts">${money(balance.due - balance.dueOutsidePayouts)}</dd>
          <dt>Paid</dt><dd data-stat="paid">${money(balance.paid)}</dd>
        </dl>
      </section>
      <form class="filters" method="get" action="${base}/payouts">
        ${selectField({ label: 'Status', name: 'status', value: status, options: STATUSES.map((s) => [s, s.charAt(0).toUpperCase() + s.slice(1)]) }, noErrors)}
        <button type="submit" class="secondary">Show</button>
      </form>
      ${status === 'pending' && payouts.length > 0
        ? html`<p>Download the pending payouts to upload:
            <a class="button secondary small" href="${base}/payouts/export?format=paypal" download>PayPal file</a>
            <a class="button secondary small" href="${base}/payouts/export?format=wise" download>Wise file</a>
            <a class="button secondary small" href="${base}/payouts/export?format=csv" download>CSV</a></p>`
        : ''}
      ${payouts.length === 0
        ? html`<div class="empty"><p>No ${status} payouts.</p>${status === 'pending' ? html`<p>"Run payouts" makes one for each affiliate whose due commission (past the hold, refunds taken off) is positive and at least the minimum payout.</p>` : ''}</div>`
        : payoutTable(payouts, base, true)}
      ${pager(list)}`;
    return sendPage(db, request, reply, { title: 'Payouts', active: 'payouts', body, flash: doneFlash(request, DONE) });
  });

  app.post('/payouts/run', async (request, reply) => {
    const { context, base } = currentProgram(request);
    const made = await runPayouts(db, context, {});
    return redirectDone(reply, `${base}/payouts`, made.length > 0 ? 'made' : 'none');
  });

  async function payoutPage(request: FastifyRequest, reply: FastifyReply, values: FormValues = {}, errors: FormErrors = noErrors) {
    const { context, base } = currentProgram(request);
    const { payoutId } = request.params as { payoutId: string };
    const [payout] = (await getPayoutPage(db, context, { id: payoutId }, { limit: 1 })).items;
    if (!payout) return reply.callNotFound();
    const name = `${payout.affiliate.firstName} ${payout.affiliate.lastName}`;
    const body = html`
      <div class="page-head"><h1>Payout to ${name}</h1></div>
      <section class="card" aria-labelledby="payout"><h2 id="payout" class="visually-hidden">Payout</h2>
        <dl class="details">
          <dt>Amount</dt><dd>${formatAmount(payout.amount, payout.currency)} <span class="muted">(${payout.entryCount} commission entries, frozen when it was made)</span></dd>
          <dt>Status</dt><dd>${badge(payout.status)}</dd>
          <dt>Pay to</dt><dd>${payout.affiliate.payoutEmail} · ${payout.affiliate.paymentMethod}</dd>
          <dt>Made</dt><dd>${formatTime(payout.createdAt)}</dd>
          <dt>Paid</dt><dd>${formatTime(payout.paidAt)}</dd>
          <dt>Method · reference</dt><dd>${[payout.method, payout.reference].filter(Boolean).join(' · ') || '—'}</dd>
          <dt>Id</dt><dd><code>${payout.id}</code></dd>
        </dl>
      </section>
      ${payout.status === 'pending'
        ? html`<section class="card" aria-labelledby="mark"><h2 id="mark">Mark it</h2>
            <p class="muted">Paid is final and pays its entries. Failed (a bounced payment) makes its commission due again for the next run.</p>
            <form method="post" action="${base}/payouts/${payout.id}" novalidate>
              ${csrfField(request.session!)}
              <div class="form-grid">
                ${selectField({ label: 'Outcome', name: 'status', value: values.status ?? 'paid', options: [['paid', 'Paid'], ['failed', 'Failed']] }, errors)}
                ${textField({ label: 'Paid at (UTC)', name: 'paidAt', type: 'datetime-local', value: values.paidAt, help: 'Empty: now. Only for paid.' }, errors)}
                ${textField({ label: 'Method', name: 'method', value: values.method ?? payout.affiliate.paymentMethod, help: 'PayPal, Wise, bank transfer…', autocomplete: 'off' }, errors)}
                ${textField({ label: 'Reference', name: 'reference', value: values.reference, help: "The payment's id in that system.", autocomplete: 'off' }, errors)}
              </div>
              <div class="actions"><button type="submit">Save</button></div>
            </form>
          </section>`
        : ''}
      <p><a href="${base}/payouts?status=${payout.status}">← All ${payout.status} payouts</a> · <a href="${base}/affiliates/${payout.affiliateId}">${name}</a></p>`;
    return sendPage(db, request, reply, { title: `Payout to ${name}`, active: 'payouts', body, status: errors.status, flash: errorFlash(errors) ?? doneFlash(request, DONE) });
  }

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

  app.get('/payouts/:payoutId', (request, reply) => payoutPage(request, reply));

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
      return payoutPage(request, reply, form, formErrorsOf(error));
    }
  });
};
