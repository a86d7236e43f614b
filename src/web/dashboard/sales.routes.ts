import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { AppServices } from '../../app-services.ts';
import { ApiError, notFound } from '../../domain/errors.ts';
import { isUuid } from '../../domain/ids.ts';
import type { ProgramContext } from '../../domain/program-context.ts';
import type { PageOrder } from '../../db/keyset.ts';
import { assertValidBody } from '../../http/validation.ts';
import { getAffiliateNames } from '../../modules/affiliates/affiliate.service.ts';
import { getEntryPage } from '../../modules/ledger/commission.service.ts';
import { CreateSaleBody, RefundSaleBody, type Sale } from '../../modules/sales/sale.schema.ts';
import { getReferral } from '../../modules/referrals/referral.service.ts';
import { exportSalesCsv, SALES_CSV_ROWS } from '../../modules/sales/sale-export.ts';
import { createSale, getSaleHistory, getSalePage, getSaleTotals, refundSale, voidSale, type SaleQuery } from '../../modules/sales/sale.service.ts';
import { html, type SafeHtml } from '../html.ts';
import { csrfField, postButton } from '../layout.ts';
import { currentProgram, doneFlash, listPage, pager, redirectDone, requestedPage, sendPage } from './dashboard-page.ts';
import { formatAmount, formatCount, formatMinor, formatRate, formatTime } from './format.ts';
import { apiBody, errorFlash, formErrorsOf, noErrors, optionalNumber, optionalText, readForm, readQuery, selectField, textField, withFieldError, type FormErrors, type FormValues } from './forms.ts';
import { affiliateChoices, affiliateField, readAffiliateField, type AffiliateFieldValue } from './affiliate-field.ts';
import { readAffiliateFilter, readDateRange } from './list-filters.ts';

// Sales on the dashboard (issue 21 item 1): the list with search, filters, sorting, totals and
// a CSV of what it shows; a sale's own page (its refunds, ledger entries and events) with refund
// and void; recording a sale by hand. Every change goes through the service the API uses, with
// the body checked against the API's schema, so the rules and the errors are the API's.

type AffiliateNames = Map<string, { name: string; email: string }>;

const SORTS: Record<string, [label: string, order: PageOrder]> = {
  newest: ['Newest first', { column: 'created_at', direction: 'desc' }],
  oldest: ['Oldest first', { column: 'created_at', direction: 'asc' }],
  'amount-desc': ['Amount, highest first', { column: 'total_earned', direction: 'desc' }],
  'amount-asc': ['Amount, lowest first', { column: 'total_earned', direction: 'asc' }],
  'commission-desc': ['Commission, highest first', { column: 'commission', direction: 'desc' }],
};

const REFUND_STATES: [string, string][] = [
  ['', 'Any'],
  ['none', 'Not refunded'],
  ['partial', 'Partly refunded'],
  ['full', 'Fully refunded'],
];

const DONE = { recorded: 'Sale recorded.', refunded: 'Refund recorded; the commission was taken back in proportion.', voided: 'Sale voided: it left the lists, the counters and the commission owed.' };

/** Sales as a table (this page, and the affiliate's page without the affiliate column). Key columns first, so they stay in view on a phone. */
export function saleTable(sales: Sale[], names: AffiliateNames | null, base: string, currency: string, sortedBy?: PageOrder): SafeHtml {
  const sort = (column: PageOrder['column']) => (sortedBy?.column === column ? html` aria-sort="${sortedBy.direction === 'asc' ? 'ascending' : 'descending'}"` : '');
  return html`<div class="table-wrap" role="region" aria-label="Sales" tabindex="0"><table>
    <thead><tr><th scope="col">Customer</th><th scope="col" class="num"${sort('total_earned')}>Amount</th><th scope="col" class="num"${sort('commission')}>Commission</th><th scope="col">Status</th><th scope="col"${sort('created_at')}>Date</th>${names ? html`<th scope="col">Affiliate</th>` : ''}<th scope="col" class="num">Rate</th><th scope="col">Invoice</th></tr></thead>
    <tbody>${sales.map((s) => {
      const affiliate = names?.get(s.affiliateId);
      return html`<tr>
        <td><a href="${base}/sales/${s.id}">${s.name || s.email}</a><br><span class="muted">${s.email}</span></td>
        <td class="num">${formatAmount(s.totalEarned, currency)}</td>
        <td class="num">${formatAmount(s.commission, currency)}</td>
        <td>${refundBadge(s, currency)}</td>
        <td>${formatTime(s.createdAt)}</td>
        ${names ? html`<td><a href="${base}/affiliates/${s.affiliateId}">${affiliate?.name ?? 'Affiliate'}</a></td>` : ''}
        <td class="num">${formatRate(s.commissionRate)}</td>
        <td>${s.externalInvoiceId || '—'}</td>
      </tr>`;
    })}</tbody>
  </table></div>`;
}

function refundBadge(s: Sale, currency: string): SafeHtml {
  if (s.status === 'paid') return html`<span class="badge ok">Paid</span>`;
  if (s.status === 'refunded') return html`<span class="badge bad">Refunded</span>`;
  return html`<span class="badge warn">${formatAmount(s.refundedAmount, currency)} refunded</span>`;
}

interface SaleListQuery {
  filter: SaleQuery;
  sort: string;
  order: PageOrder;
  /** The query string's values, to keep in the form, the pager and the CSV link. */
  values: Record<string, string | undefined>;
  errors: Record<string, string>;
  label?: string;
}

async function readSaleListQuery(db: AppServices['db'], request: FastifyRequest): Promise<SaleListQuery> {
  const { context } = currentProgram(request);
  const query = readQuery(request);
  const affiliate = await readAffiliateFilter(db, context, query.affiliate);
  const range = readDateRange(query.from, query.to);
  const errors: Record<string, string> = { ...range.errors };
  if (affiliate.error) errors.affiliate = affiliate.error;
  const q = (query.q ?? '').trim();
  if (q.length > 200) errors.q = 'Search for at most 200 characters.';
  const refunded = REFUND_STATES.some(([value]) => value === query.refunded) ? query.refunded : '';
  const sort = query.sort !== undefined && query.sort in SORTS ? query.sort : 'newest';
  return {
    filter: {
      affiliateId: affiliate.affiliateId,
      createdFrom: range.createdFrom,
      createdBefore: range.createdBefore,
      ...(q ? { search: q } : {}),
      ...(refunded ? { refunded: refunded as SaleQuery['refunded'] } : {}),
    },
    sort,
    order: SORTS[sort]![1],
    values: { q: q || undefined, affiliate: query.affiliate, refunded: refunded || undefined, from: query.from, to: query.to, sort: sort === 'newest' ? undefined : sort },
    errors,
    label: affiliate.label,
  };
}

const queryString = (values: Record<string, string | undefined>) => new URLSearchParams(Object.entries(values).filter((e): e is [string, string] => e[1] !== undefined && e[1] !== '')).toString();

/** A sale id from the path (`:sale`: ids named …Id must be UUIDs): a positive whole number, else 404 (never a 500). */
function saleIdOf(request: FastifyRequest): number {
  const { sale: saleId } = request.params as { sale: string };
  if (!/^[1-9]\d{0,15}$/.test(saleId) || !Number.isSafeInteger(Number(saleId))) throw notFound('Sale');
  return Number(saleId);
}


/** What the customer field of the sale form names: an e-mail (POST /sales's email) or a referral of the program (its referralId). */
async function readCustomerField(db: AppServices['db'], program: ProgramContext, value: string | undefined): Promise<{ email?: string; referralId?: string; error?: string }> {
  const text = value?.trim() ?? '';
  if (text === '') return {};
  if (text.includes('@')) return { email: text };
  if (!isUuid(text)) return { error: 'Give the customer’s e-mail, or their referral’s id.' };
  try {
    return { referralId: (await getReferral(db, program, { id: text.toLowerCase() })).id };
  } catch (error) {
    if (error instanceof ApiError && error.code === 'not_found') return { error: 'No customer of this program has this referral id.' };
    throw error;
  }
}

const NEW_CUSTOMER = 'No customer of this program has this e-mail yet. To record a new customer’s first sale, name their affiliate and the customer’s name below.';

/** The form field a service error that names no field is about (an unknown customer, a taken invoice, an inactive affiliate, a code that does not apply). */
function saleErrorField(error: ApiError, form: FormValues, byAffiliate: boolean): string | undefined {
  if (error.code === 'duplicate_sale') return 'externalInvoiceId';
  if (error.code === 'affiliate_inactive') return byAffiliate ? 'affiliate' : optionalText(form.promoCode) && !optionalText(form.customer) ? 'promoCode' : 'customer';
  if (error.code === 'not_found') return optionalText(form.promoCode) && error.detail.startsWith('Promotional code') ? 'promoCode' : 'customer';
  if (error.code.startsWith('promo_code_') || error.code === 'coupon_invalid') return 'promoCode';
  if (error.code === 'conflict') return 'customer';
  return undefined;
}

export const saleRoutes: FastifyPluginAsync<AppServices> = async (app, { db }) => {
  app.get('/sales', async (request, reply) => {
    const { context, base, program } = currentProgram(request);
    const list = await readSaleListQuery(db, request);
    const invalid = Object.keys(list.errors).length > 0;
    const page = requestedPage(request, list.order);
    const [found, totals] = invalid ? [{ items: [] }, null] : await Promise.all([getSalePage(db, context, list.filter, page), getSaleTotals(db, context, list.filter)]);
    const shown = listPage(found, page, `${base}/sales`, list.values);
    const names = await getAffiliateNames(db, context, shown.items.map((s) => s.affiliateId));
    const filtered = Object.entries(list.values).some(([key, v]) => key !== 'sort' && v !== undefined && v !== '');
    const errors: FormErrors = { fields: list.errors, message: '', status: 200 };
    const qs = queryString(list.values);

    const body = html`
      <div class="page-head"><h1>Sales</h1><a class="button" href="${base}/sales/new">Record a sale</a></div>
      <form class="filters" method="get" action="${base}/sales" role="search" aria-label="Filter sales">
        ${textField({ label: 'Customer name or e-mail', name: 'q', type: 'search', value: list.values.q }, errors)}
        ${textField({ label: 'Affiliate (e-mail, id or link)', name: 'affiliate', type: 'search', value: list.values.affiliate }, errors)}
        ${selectField({ label: 'Refunds', name: 'refunded', value: list.values.refunded ?? '', options: REFUND_STATES }, noErrors)}
        ${textField({ label: 'From day (UTC)', name: 'from', type: 'date', value: list.values.from }, errors)}
        ${textField({ label: 'To day (UTC)', name: 'to', type: 'date', value: list.values.to }, errors)}
        ${selectField({ label: 'Sort by', name: 'sort', value: list.sort, options: Object.entries(SORTS).map(([value, [label]]) => [value, label]) }, noErrors)}
        <button type="submit" class="secondary">Apply</button>
        ${filtered || list.sort !== 'newest' ? html`<a href="${base}/sales">Show all</a>` : ''}
      </form>
      ${list.label ? html`<p class="muted">Sales credited to ${list.label}.</p>` : ''}
      ${totals && totals.count > 0
        ? html`<p class="totals" aria-label="Totals of ${filtered ? 'the filtered' : 'all'} sales"><strong>${formatCount(totals.count)} sale${totals.count === 1 ? '' : 's'}</strong> ·
            ${formatMinor(totals.amount, program.currency)} in all · ${formatMinor(totals.refunded, program.currency)} refunded ·
            ${formatMinor(totals.commission, program.currency)} commission after refunds
            · <a href="${base}/sales.csv${qs ? `?${qs}` : ''}" download>Download CSV${totals.count > SALES_CSV_ROWS ? ` (the first ${formatCount(SALES_CSV_ROWS)})` : ''}</a></p>`
        : ''}
      ${shown.items.length === 0
        ? html`<div class="empty">${filtered
            ? html`<p>No sales match these filters.</p>`
            : html`<p><strong>No sales yet.</strong></p>
                <p>Your site records a sale with <code>POST /api/v1/sales</code> when a referred customer pays
                (see <a href="/docs">the API reference</a>); the affiliate's commission is computed and added up here.
                <a href="${base}/keys">Create an API key</a>, <a href="${base}/apps">connect an automation tool</a>, or <a href="${base}/sales/new">record one by hand</a>.</p>`}</div>`
        : saleTable(shown.items, names, base, program.currency, list.order)}
      ${pager(shown)}`;
    return sendPage(db, request, reply, { title: 'Sales', active: 'sales', body, flash: doneFlash(request, DONE) });
  });

  // What the list shows (every page, up to SALES_CSV_ROWS), as CSV, in the list's order.
  app.get('/sales.csv', async (request, reply) => {
    const { context } = currentProgram(request);
    const list = await readSaleListQuery(db, request);
    const csv = await exportSalesCsv(db, context, Object.keys(list.errors).length > 0 ? null : list.filter, list.order);
    const day = context.clock().toISOString().slice(0, 10);
    return reply
      .type('text/csv; charset=utf-8')
      .header('content-disposition', `attachment; filename="sales-${day}.csv"`)
      .send(csv);
  });

  async function newSalePage(request: FastifyRequest, reply: FastifyReply, values: FormValues = {}, errors: FormErrors = noErrors, affiliate?: AffiliateFieldValue) {
    const { base, program, context } = currentProgram(request);
    const suggestions = affiliate?.picker ? [] : (await affiliateChoices(db, context)).rows;
    const body = html`
      <div class="page-head"><h1>Record a sale</h1></div>
      <form class="card" method="post" action="${base}/sales/new" novalidate>
        ${csrfField(request.session!)}
        <p class="lead">As <code>POST /api/v1/sales</code> does: a payment of a referred customer, credited to their affiliate — or the first payment of a new customer, credited to the affiliate you name.</p>
        ${textField({ label: `Amount paid (${program.currency})`, name: 'totalEarned', type: 'text', value: values.totalEarned, required: true, attrs: html`inputmode="decimal" autocomplete="off"` }, errors)}
        ${textField({ label: 'Customer', name: 'customer', value: values.customer, required: true, help: 'The e-mail the customer signed up with, or their referral’s id.', attrs: html`autocomplete="off"` }, errors)}
        ${affiliateField({ label: 'Affiliate, for a new customer', name: 'affiliate', help: 'A customer not referred yet is recorded with this affiliate: their e-mail, one of their links or their id — or type a name and choose from the list. A customer already referred stays with their affiliate: leave it empty.', value: affiliate ?? { text: values.affiliate ?? '' }, suggestions, searchUrl: `${base}/affiliates/choices` }, errors)}
        ${textField({ label: "Customer's name", name: 'name', value: values.name, help: 'Needed when the customer is new.' }, errors)}
        ${textField({ label: 'Invoice id', name: 'externalInvoiceId', value: values.externalInvoiceId, help: 'Your billing system’s invoice; a second sale with it is refused.' }, errors)}
        ${textField({ label: 'Promotional code', name: 'promoCode', value: values.promoCode }, errors)}
        ${textField({ label: 'Commission rate (%)', name: 'commissionRate', value: values.commissionRate, help: 'Leave empty for the affiliate’s rate or the program’s plan.', attrs: html`inputmode="decimal"` }, errors)}
        <div class="actions"><button type="submit">Record sale</button> <a href="${base}/sales">Cancel</a></div>
      </form>`;
    return sendPage(db, request, reply, { title: 'Record a sale', active: 'sales', body, status: errors.status, flash: errorFlash(errors) });
  }

  app.get('/sales/new', (request, reply) => newSalePage(request, reply));

  // The customer (an e-mail or a referral id) and the affiliate (affiliate-field.ts) are named as a
  // person knows them, then handed to the service as POST /sales's email and referralId; the
  // rest is the API's body, checked by its schema.
  app.post('/sales/new', async (request, reply) => {
    const { context, base } = currentProgram(request);
    const form = readForm(request);
    const customer = await readCustomerField(db, context, form.customer);
    const affiliate = await readAffiliateField(db, context, form, 'affiliate');
    // A referral names its affiliate: a second one would credit the sale elsewhere.
    const both = customer.referralId !== undefined && affiliate.text !== '' ? 'The referral names its affiliate: leave this empty, or give the customer’s e-mail instead.' : undefined;
    let errors: FormErrors;
    try {
      const body = apiBody(CreateSaleBody, {
        totalEarned: optionalNumber(form.totalEarned) ?? '',
        email: customer.email,
        referralId: customer.referralId ?? affiliate.named?.apiValue,
        name: optionalText(form.name),
        externalInvoiceId: optionalText(form.externalInvoiceId),
        promoCode: optionalText(form.promoCode),
        commissionRate: optionalNumber(form.commissionRate),
      });
      if (!customer.error && !affiliate.error && !both) {
        const sale = await createSale(db, context, body);
        return redirectDone(reply, `${base}/sales/${sale.id}`, 'recorded');
      }
      errors = noErrors;
    } catch (error) {
      const byAffiliate = customer.referralId === undefined && affiliate.named !== undefined;
      errors = formErrorsOf(error, { email: 'customer', referralId: byAffiliate ? 'affiliate' : 'customer' });
      const field = error instanceof ApiError ? saleErrorField(error, form, byAffiliate) : undefined;
      if (field) errors = withFieldError(errors, field, field === 'customer' && error instanceof ApiError && error.code === 'not_found' ? NEW_CUSTOMER : errors.message);
    }
    // Nobody named: the service's "referralId, email or promoCode is required", said for this form.
    if (errors.fields.customer && !optionalText(form.customer)) errors.fields.customer = 'Is required: the customer’s e-mail or referral id.';
    if (customer.error) errors = withFieldError(errors, 'customer', customer.error);
    if (affiliate.error) errors = withFieldError(errors, 'affiliate', affiliate.error);
    if (both) errors = withFieldError(errors, 'affiliate', both);
    return newSalePage(request, reply, form, errors, affiliate);
  });

  async function salePage(request: FastifyRequest, reply: FastifyReply, refundValue = '', refundErrors: FormErrors = noErrors) {
    const { context, base, program } = currentProgram(request);
    const id = saleIdOf(request);
    const { sale: s, refunds, events } = await getSaleHistory(db, context, id);
    const now = context.clock();
    // Up to 101 entries, as the page has always shown (a sale has a handful).
    const [{ items: entries }, names] = await Promise.all([getEntryPage(db, context, { saleId: id }, { limit: 101 }, now), getAffiliateNames(db, context, [s.affiliateId])]);
    const currency = program.currency;
    const affiliate = names.get(s.affiliateId);
    const left = s.notRefunded;
    const title = `Sale #${s.id}`;
    const body = html`
      <div class="page-head"><h1>${title}: ${formatAmount(s.totalEarned, currency)} from ${s.name || s.email}</h1></div>
      <p><a href="${base}/sales">← All sales</a></p>
      <dl class="details card">
        <dt>Status</dt><dd>${refundBadge(s, currency)}</dd>
        <dt>Customer</dt><dd>${s.name} <span class="muted">${s.email}</span></dd>
        <dt>Affiliate</dt><dd><a href="${base}/affiliates/${s.affiliateId}">${affiliate?.name ?? 'Affiliate'}</a> <span class="muted">${affiliate?.email ?? ''}</span></dd>
        <dt>Date</dt><dd>${formatTime(s.createdAt)}</dd>
        <dt>Amount</dt><dd>${formatAmount(s.totalEarned, currency)}</dd>
        <dt>Refunded</dt><dd>${formatAmount(s.refundedAmount, currency)}</dd>
        <dt>Commission</dt><dd>${formatAmount(s.commission, currency)} <span class="muted">(${formatAmount(s.grossCommission, currency)} at ${s.commissionRule === 'flat' ? 'a flat amount' : formatRate(s.commissionRate)}${s.refundedCommission > 0 ? html`, ${formatAmount(s.refundedCommission, currency)} taken back` : ''})</span></dd>
        <dt>Invoice</dt><dd>${s.externalInvoiceId || '—'}</dd>
        ${s.externalId ? html`<dt>External id</dt><dd>${s.externalId}</dd>` : ''}
      </dl>

      <section class="card" aria-labelledby="refund-heading">
        <h2 id="refund-heading">Refund</h2>
        ${left > 0
          ? html`<form method="post" action="${base}/sales/${s.id}/refund" novalidate data-confirm="Record this refund? The affiliate's commission is taken back in proportion.">
              ${csrfField(request.session!)}
              ${textField({ label: `Amount to refund (${currency})`, name: 'amount', value: refundValue, help: `Leave empty to refund all that is left: ${formatAmount(left, currency)}.`, attrs: html`inputmode="decimal" autocomplete="off"` }, refundErrors)}
              <div class="actions"><button type="submit">Refund</button></div>
            </form>`
          : html`<p>Fully refunded.</p>`}
        <h3>Void</h3>
        <p class="help">Voiding removes the sale as if it never happened (a mistaken or test sale): it leaves the lists, the counters and the commission owed.</p>
        ${postButton(request.session!, `${base}/sales/${s.id}/void`, 'Void sale', { className: 'danger small', confirm: `Void sale #${s.id}? It cannot be undone.` })}
      </section>

      <section aria-labelledby="refunds-heading">
        <h2 id="refunds-heading">Refunds</h2>
        ${refunds.length === 0
          ? html`<p class="empty">No refunds.</p>`
          : html`<div class="table-wrap" role="region" aria-label="Refunds" tabindex="0"><table>
              <thead><tr><th scope="col" class="num">Amount</th><th scope="col" class="num">Commission taken back</th><th scope="col">Date</th></tr></thead>
              <tbody>${refunds.map((r) => html`<tr><td class="num">${formatAmount(r.amount, currency)}</td><td class="num">${formatAmount(r.commission, currency)}</td><td>${formatTime(r.createdAt)}</td></tr>`)}</tbody>
            </table></div>`}
      </section>

      <section aria-labelledby="ledger-heading">
        <h2 id="ledger-heading">Commission ledger</h2>
        ${entries.length === 0
          ? html`<p class="empty">No ledger entries (the sale earned no commission).</p>`
          : html`<div class="table-wrap" role="region" aria-label="Commission ledger" tabindex="0"><table>
              <thead><tr><th scope="col" class="num">Amount</th><th scope="col">Kind</th><th scope="col">Status</th><th scope="col">Due</th><th scope="col">Payout</th><th scope="col">Recorded</th></tr></thead>
              <tbody>${entries.map((e) => html`<tr><td class="num">${formatAmount(e.amount, e.currency)}</td><td>${e.kind}</td><td>${e.status}</td><td>${formatTime(e.dueAt)}</td><td>${e.payoutId ? html`<a href="${base}/payouts/${e.payoutId}">Payout</a>` : '—'}</td><td>${formatTime(e.createdAt)}</td></tr>`)}</tbody>
            </table></div>`}
      </section>

      <section aria-labelledby="events-heading">
        <h2 id="events-heading">Events</h2>
        ${events.length === 0
          ? html`<p class="empty">No events found (events are kept for the event retention period).</p>`
          : html`<ul class="plain">${events.map((e) => html`<li><code>${e.type}</code> ${formatTime(e.createdAt)} <span class="muted">${e.id}</span></li>`)}</ul>`}
      </section>`;
    return sendPage(db, request, reply, { title, active: 'sales', body, status: refundErrors.status, flash: refundErrors.message ? errorFlash(refundErrors) : doneFlash(request, DONE) });
  }

  app.get('/sales/:sale', (request, reply) => salePage(request, reply));

  app.post('/sales/:sale/refund', async (request, reply) => {
    const { context, base } = currentProgram(request);
    const saleId = saleIdOf(request);
    const form = readForm(request);
    try {
      const amount = optionalNumber(form.amount);
      const body = amount === undefined ? { saleId } : { saleId, amount };
      assertValidBody(RefundSaleBody, body);
      await refundSale(db, context, body);
      return redirectDone(reply, `${base}/sales/${saleId}`, 'refunded');
    } catch (error) {
      return salePage(request, reply, form.amount ?? '', formErrorsOf(error, { saleId: 'amount' }));
    }
  });

  app.post('/sales/:sale/void', async (request, reply) => {
    const { context, base } = currentProgram(request);
    await voidSale(db, context, saleIdOf(request));
    return redirectDone(reply, `${base}/sales`, 'voided');
  });
};
