import type { FastifyPluginAsync } from 'fastify';
import type { AppServices } from '../../app-services.ts';
import { millionthsToRate } from '../../domain/commission.ts';
import { getAffiliateNames } from '../../modules/affiliates/affiliate.service.ts';
import type { SaleRow } from '../../modules/sales/sale.repository.ts';
import { getSalePage } from '../../modules/sales/sale.service.ts';
import { html, type SafeHtml } from '../html.ts';
import { currentProgram, pager, requestedPage, sendPage, splitPage } from './dashboard-page.ts';
import { formatMinor, formatRate, formatTime } from './format.ts';
import { noErrors, readQuery, textField } from './forms.ts';
import { readAffiliateFilter, readDateRange } from './list-filters.ts';

type AffiliateNames = Map<string, { name: string; email: string }>;

/** Sales as a table (this page, and the affiliate's page without the affiliate column). */
export function saleTable(rows: SaleRow[], names: AffiliateNames | null, base: string, currency: string): SafeHtml {
  return html`<div class="table-wrap"><table>
    <thead><tr><th scope="col">Date</th><th scope="col">Customer</th>${names ? html`<th scope="col">Affiliate</th>` : ''}<th scope="col" class="num">Amount</th><th scope="col" class="num">Rate</th><th scope="col" class="num">Commission</th><th scope="col">Invoice</th></tr></thead>
    <tbody>${rows.map((s) => {
      const affiliate = names?.get(s.affiliate_id);
      return html`<tr>
        <td>${formatTime(s.created_at)}</td>
        <td>${s.name}<br><span class="muted">${s.email}</span></td>
        ${names ? html`<td><a href="${base}/affiliates/${s.affiliate_id}">${affiliate?.name ?? 'Affiliate'}</a></td>` : ''}
        <td class="num">${formatMinor(s.total_earned, currency)}${Number(s.refunded_amount) > 0 ? html`<br><span class="muted">${formatMinor(s.refunded_amount, currency)} refunded</span>` : ''}</td>
        <td class="num">${formatRate(millionthsToRate(s.commission_rate))}</td>
        <td class="num">${formatMinor(Number(s.commission) - Number(s.refunded_commission), currency)}</td>
        <td>${s.external_invoice_id || '—'}</td>
      </tr>`;
    })}</tbody>
  </table></div>`;
}

export const saleRoutes: FastifyPluginAsync<AppServices> = async (app, { db }) => {
  app.get('/sales', async (request, reply) => {
    const { context, base, program } = currentProgram(request);
    const query = readQuery(request);
    const filter = await readAffiliateFilter(db, context, query.affiliate);
    const range = readDateRange(query.from, query.to);
    const invalid = filter.error !== undefined || Object.keys(range.errors).length > 0;
    const page = requestedPage(request);
    const rows = invalid
      ? []
      : await getSalePage(db, context, { affiliateId: filter.affiliateId, createdFrom: range.createdFrom, createdBefore: range.createdBefore }, page);
    const list = splitPage(rows, page, `${base}/sales`, { affiliate: query.affiliate, from: query.from, to: query.to });
    const names = await getAffiliateNames(db, context, list.items.map((s) => s.affiliate_id));
    const filtered = [query.affiliate, query.from, query.to].some((v) => v !== undefined && v !== '');

    const body = html`
      <div class="page-head"><h1>Sales</h1></div>
      <form class="filters" method="get" action="${base}/sales" role="search">
        ${textField({ label: 'Affiliate e-mail', name: 'affiliate', type: 'search', value: query.affiliate, error: filter.error }, noErrors)}
        ${textField({ label: 'From (UTC)', name: 'from', type: 'date', value: query.from, error: range.errors.from }, noErrors)}
        ${textField({ label: 'To (UTC)', name: 'to', type: 'date', value: query.to, error: range.errors.to }, noErrors)}
        <button type="submit" class="secondary">Filter</button>
        ${filtered ? html`<a href="${base}/sales">Show all</a>` : ''}
      </form>
      ${filter.label ? html`<p class="muted">Sales credited to ${filter.label}.</p>` : ''}
      ${list.items.length === 0
        ? html`<div class="empty">${filtered
            ? html`<p>No sales match these filters.</p>`
            : html`<p><strong>No sales yet.</strong></p>
                <p>Your site records a sale with <code>POST /api/v1/sales</code> when a referred customer pays
                (see <a href="/docs">the API reference</a>); the affiliate's commission is computed and added up here.
                <a href="${base}/keys">Create an API key</a> or <a href="${base}/apps">connect an automation tool</a> to start.</p>`}</div>`
        : saleTable(list.items, names, base, program.currency)}
      ${pager(list)}`;
    return sendPage(db, request, reply, { title: 'Sales', active: 'sales', body });
  });
};
