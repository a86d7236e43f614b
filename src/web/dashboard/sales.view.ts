import type { Affiliate } from '../../modules/affiliates/affiliate.schema.ts';
import type { CommissionEntry } from '../../modules/ledger/commission.schema.ts';
import type { Sale } from '../../modules/sales/sale.schema.ts';
import type { getSaleTotals, SaleHistory } from '../../modules/sales/sale.service.ts';
import type { PageOrder } from '../../db/keyset.ts';
import { html, type SafeHtml } from '../html.ts';
import { csrfField, postButton } from '../layout.ts';
import { affiliateField, type AffiliateFieldValue } from './affiliate-field.ts';
import { pager, type DashboardSession, type ListPage } from './dashboard-page.ts';
import { formatAmount, formatCount, formatMinor, formatRate, formatTime } from './format.ts';
import { noErrors, selectField, textField, type FormErrors, type FormValues } from './forms.ts';
import type { AffiliateNames } from './tables/affiliate-column.ts';
import { refundBadge, saleTable } from './tables/sales-table.ts';

// The sales pages as pure functions of what they show: the list (filters, totals, CSV link),
// the form that records a sale, and a sale's page (refund, void, refunds, ledger, events).

export interface SaleListView {
  base: string;
  currency: string;
  /** The query string's values, kept in the form. */
  values: Record<string, string | undefined>;
  /** Why a filter names nothing, beside its field. */
  errors: FormErrors;
  sort: string;
  order: PageOrder;
  sorts: [value: string, label: string][];
  refundStates: [value: string, label: string][];
  /** Whose sales are listed, when the affiliate filter names one. */
  label?: string;
  filtered: boolean;
  /** What the filtered sales add up to (null: a filter names nothing), in minor units. */
  totals: Awaited<ReturnType<typeof getSaleTotals>> | null;
  csvQuery: string;
  csvRows: number;
  list: ListPage<Sale>;
  names: AffiliateNames;
}

function totalsLine(v: SaleListView): SafeHtml | string {
  const { totals, base, currency } = v;
  if (!totals) return '';
  const csvLink = (rows: number) =>
    html`<a href="${base}/sales.csv${v.csvQuery ? `?${v.csvQuery}` : ''}" download>Download CSV${rows > v.csvRows ? ` (the first ${formatCount(v.csvRows)})` : ''}</a>`;
  if ('moreThan' in totals) {
    return html`<p class="totals" aria-label="Totals of the filtered sales"><strong>More than ${formatCount(totals.moreThan)} sales</strong> match:
            narrow the search to see what they add up to · ${csvLink(totals.moreThan + 1)}</p>`;
  }
  if (totals.count === 0) return '';
  return html`<p class="totals" aria-label="Totals of ${v.filtered ? 'the filtered' : 'all'} sales"><strong>${formatCount(totals.count)} sale${totals.count === 1 ? '' : 's'}</strong> ·
            ${formatMinor(totals.amount, currency)} in all · ${formatMinor(totals.refunded, currency)} refunded ·
            ${formatMinor(totals.commission, currency)} commission after refunds
            · ${csvLink(totals.count)}</p>`;
}

export function saleListBody(v: SaleListView): SafeHtml {
  const { base, values, errors, list } = v;
  return html`
      <div class="page-head"><h1>Sales</h1><a class="button" href="${base}/sales/new">Record a sale</a></div>
      <form class="filters" method="get" action="${base}/sales" role="search" aria-label="Filter sales">
        ${textField({ label: 'Customer name or e-mail', name: 'q', type: 'search', value: values.q }, errors)}
        ${textField({ label: 'Affiliate (e-mail, id or link)', name: 'affiliate', type: 'search', value: values.affiliate }, errors)}
        ${selectField({ label: 'Refunds', name: 'refunded', value: values.refunded ?? '', options: v.refundStates }, noErrors)}
        ${textField({ label: 'From day (UTC)', name: 'from', type: 'date', value: values.from }, errors)}
        ${textField({ label: 'To day (UTC)', name: 'to', type: 'date', value: values.to }, errors)}
        ${selectField({ label: 'Sort by', name: 'sort', value: v.sort, options: v.sorts }, noErrors)}
        <button type="submit" class="secondary">Apply</button>
        ${v.filtered || v.sort !== 'newest' ? html`<a href="${base}/sales">Show all</a>` : ''}
      </form>
      ${v.label ? html`<p class="muted">Sales credited to ${v.label}.</p>` : ''}
      ${totalsLine(v)}
      ${list.items.length === 0
        ? html`<div class="empty">${v.filtered
            ? html`<p>No sales match these filters.</p>`
            : html`<p><strong>No sales yet.</strong></p>
                <p>Your site records a sale with <code>POST /api/v1/sales</code> when a referred customer pays
                (see <a href="/docs">the API reference</a>); the affiliate's commission is computed and added up here.
                <a href="${base}/keys">Create an API key</a>, <a href="${base}/apps">connect an automation tool</a>, or <a href="${base}/sales/new">record one by hand</a>.</p>`}</div>`
        : saleTable(list.items, v.names, base, v.currency, v.order)}
      ${pager(list)}`;
}

export interface NewSaleView {
  base: string;
  session: DashboardSession;
  currency: string;
  values: FormValues;
  errors: FormErrors;
  /** The affiliate field as posted (its picker, when the text named nobody exactly). */
  affiliate?: AffiliateFieldValue;
  /** The affiliate field's suggestions. */
  suggestions: Affiliate[];
}

export function newSaleBody(v: NewSaleView): SafeHtml {
  const { base, values, errors } = v;
  return html`
      <div class="page-head"><h1>Record a sale</h1></div>
      <form class="card" method="post" action="${base}/sales/new" novalidate>
        ${csrfField(v.session)}
        <p class="lead">As <code>POST /api/v1/sales</code> does: a payment of a referred customer, credited to their affiliate — or the first payment of a new customer, credited to the affiliate you name.</p>
        ${textField({ label: `Amount paid (${v.currency})`, name: 'totalEarned', type: 'text', value: values.totalEarned, required: true, attrs: html`inputmode="decimal" autocomplete="off"` }, errors)}
        ${textField({ label: 'Customer', name: 'customer', value: values.customer, required: true, help: 'The e-mail the customer signed up with, or their referral’s id.', attrs: html`autocomplete="off"` }, errors)}
        ${affiliateField({ label: 'Affiliate, for a new customer', name: 'affiliate', help: 'A customer not referred yet is recorded with this affiliate: their e-mail, one of their links or their id — or type a name and choose from the list. A customer already referred stays with their affiliate: leave it empty.', value: v.affiliate ?? { text: values.affiliate ?? '' }, suggestions: v.suggestions, searchUrl: `${base}/affiliates/choices` }, errors)}
        ${textField({ label: "Customer's name", name: 'name', value: values.name, help: 'Needed when the customer is new.' }, errors)}
        ${textField({ label: 'Invoice id', name: 'externalInvoiceId', value: values.externalInvoiceId, help: 'Your billing system’s invoice; a second sale with it is refused.' }, errors)}
        ${textField({ label: 'Promotional code', name: 'promoCode', value: values.promoCode }, errors)}
        ${textField({ label: 'Commission rate (%)', name: 'commissionRate', value: values.commissionRate, help: 'Leave empty for the affiliate’s rate or the program’s plan.', attrs: html`inputmode="decimal"` }, errors)}
        <div class="actions"><button type="submit">Record sale</button> <a href="${base}/sales">Cancel</a></div>
      </form>`;
}

export interface SaleView extends SaleHistory {
  base: string;
  session: DashboardSession;
  currency: string;
  /** The credited affiliate's name and e-mail, when it still exists. */
  affiliate?: { name: string; email: string };
  entries: CommissionEntry[];
  /** The refund form, as posted when it failed. */
  refundValue: string;
  refundErrors: FormErrors;
}

function detailsCard(v: SaleView): SafeHtml {
  const { sale: s, base, currency, affiliate } = v;
  return html`<dl class="details card">
        <dt>Status</dt><dd>${refundBadge(s, currency)}</dd>
        <dt>Customer</dt><dd>${s.name} <span class="muted">${s.email}</span></dd>
        <dt>Affiliate</dt><dd><a href="${base}/affiliates/${s.affiliateId}">${affiliate?.name ?? 'Affiliate'}</a> <span class="muted">${affiliate?.email ?? ''}</span></dd>
        <dt>Date</dt><dd>${formatTime(s.createdAt)}</dd>
        <dt>Amount</dt><dd>${formatAmount(s.totalEarned, currency)}</dd>
        <dt>Refunded</dt><dd>${formatAmount(s.refundedAmount, currency)}</dd>
        <dt>Commission</dt><dd>${formatAmount(s.commission, currency)} <span class="muted">(${formatAmount(s.grossCommission, currency)} at ${s.commissionRule === 'flat' ? 'a flat amount' : formatRate(s.commissionRate)}${s.refundedCommission > 0 ? html`, ${formatAmount(s.refundedCommission, currency)} taken back` : ''})</span></dd>
        <dt>Invoice</dt><dd>${s.externalInvoiceId || '—'}</dd>
        ${s.externalId ? html`<dt>External id</dt><dd>${s.externalId}</dd>` : ''}
      </dl>`;
}

function refundSection(v: SaleView): SafeHtml {
  const { sale: s, base, currency } = v;
  return html`<section class="card" aria-labelledby="refund-heading">
        <h2 id="refund-heading">Refund</h2>
        ${s.notRefunded > 0
          ? html`<form method="post" action="${base}/sales/${s.id}/refund" novalidate data-confirm="Record this refund? The affiliate's commission is taken back in proportion.">
              ${csrfField(v.session)}
              ${textField({ label: `Amount to refund (${currency})`, name: 'amount', value: v.refundValue, help: `Leave empty to refund all that is left: ${formatAmount(s.notRefunded, currency)}.`, attrs: html`inputmode="decimal" autocomplete="off"` }, v.refundErrors)}
              <div class="actions"><button type="submit">Refund</button></div>
            </form>`
          : html`<p>Fully refunded.</p>`}
        <h3>Void</h3>
        <p class="help">Voiding removes the sale as if it never happened (a mistaken or test sale): it leaves the lists, the counters and the commission owed.</p>
        ${postButton(v.session, `${base}/sales/${s.id}/void`, 'Void sale', { className: 'danger small', confirm: `Void sale #${s.id}? It cannot be undone.` })}
      </section>`;
}

function historySections(v: SaleView): SafeHtml {
  const { refunds, entries, events, base, currency } = v;
  return html`<section aria-labelledby="refunds-heading">
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
}

/** The sale page's title: "Sale #12". */
export const saleTitle = (s: Sale) => `Sale #${s.id}`;

export function saleBody(v: SaleView): SafeHtml {
  const { sale: s } = v;
  return html`
      <div class="page-head"><h1>${saleTitle(s)}: ${formatAmount(s.totalEarned, v.currency)} from ${s.name || s.email}</h1></div>
      <p><a href="${v.base}/sales">← All sales</a></p>
      ${detailsCard(v)}

      ${refundSection(v)}

      ${historySections(v)}`;
}
