import type { PageOrder } from '../../../db/keyset.ts';
import type { Sale } from '../../../modules/sales/sale.schema.ts';
import { html, type SafeHtml } from '../../html.ts';
import { formatAmount, formatRate, formatTime } from '../format.ts';
import { affiliateCell, type AffiliateNames } from './affiliate-column.ts';

// Sales as a table: the sales list (with the affiliate column and its sort) and an affiliate's
// page (without). Key columns first, so they stay in view on a phone.

/** Paid, refunded, or how much of it was refunded. */
export function refundBadge(s: Sale, currency: string): SafeHtml {
  if (s.status === 'paid') return html`<span class="badge ok">Paid</span>`;
  if (s.status === 'refunded') return html`<span class="badge bad">Refunded</span>`;
  return html`<span class="badge warn">${formatAmount(s.refundedAmount, currency)} refunded</span>`;
}

/** `names`: the affiliates of the rows, for the affiliate column (null: no such column). `sortedBy` marks the sorted column. */
export function saleTable(sales: Sale[], names: AffiliateNames | null, base: string, currency: string, sortedBy?: PageOrder): SafeHtml {
  const sort = (column: PageOrder['column']) => (sortedBy?.column === column ? html` aria-sort="${sortedBy.direction === 'asc' ? 'ascending' : 'descending'}"` : '');
  return html`<div class="table-wrap" role="region" aria-label="Sales" tabindex="0"><table>
    <thead><tr><th scope="col">Customer</th><th scope="col" class="num"${sort('total_earned')}>Amount</th><th scope="col" class="num"${sort('commission')}>Commission</th><th scope="col">Status</th><th scope="col"${sort('created_at')}>Date</th>${names ? html`<th scope="col">Affiliate</th>` : ''}<th scope="col" class="num">Rate</th><th scope="col">Invoice</th></tr></thead>
    <tbody>${sales.map(
      (s) => html`<tr>
        <td><a href="${base}/sales/${s.id}">${s.name || s.email}</a><br><span class="muted">${s.email}</span></td>
        <td class="num">${formatAmount(s.totalEarned, currency)}</td>
        <td class="num">${formatAmount(s.commission, currency)}</td>
        <td>${refundBadge(s, currency)}</td>
        <td>${formatTime(s.createdAt)}</td>
        ${names ? affiliateCell(names, base, s.affiliateId) : ''}
        <td class="num">${formatRate(s.commissionRate)}</td>
        <td>${s.externalInvoiceId || '—'}</td>
      </tr>`,
    )}</tbody>
  </table></div>`;
}
