import type { Payout } from '../../../modules/payouts/payout.schema.ts';
import { html, type SafeHtml } from '../../html.ts';
import { formatAmount, formatTime } from '../format.ts';

// Payouts as a table: the payouts list (with the affiliate column) and an affiliate's payout
// history (without); the key columns first, for narrow screens.

export const payoutBadge = (status: Payout['status']) => html`<span class="badge ${status === 'paid' ? 'ok' : status === 'failed' ? 'bad' : ''}">${status}</span>`;

export function payoutTable(payouts: Payout[], base: string, withAffiliate: boolean): SafeHtml {
  return html`<div class="table-wrap" role="region" aria-label="Payouts" tabindex="0"><table>
    <thead><tr>${withAffiliate ? html`<th scope="col">Affiliate</th>` : ''}<th scope="col" class="num">Amount</th><th scope="col">Status</th><th scope="col">Made</th><th scope="col">Paid</th><th scope="col" class="num">Entries</th><th scope="col">Method · reference</th></tr></thead>
    <tbody>${payouts.map(
      (p) => html`<tr>
        ${withAffiliate ? html`<td><a href="${base}/affiliates/${p.affiliateId}">${p.affiliate.firstName} ${p.affiliate.lastName}</a><br><span class="muted">${p.affiliate.payoutEmail}</span></td>` : ''}
        <td class="num"><a href="${base}/payouts/${p.id}" aria-label="Payout of ${formatAmount(p.amount, p.currency)} to ${p.affiliate.firstName} ${p.affiliate.lastName}">${formatAmount(p.amount, p.currency)}</a></td>
        <td>${payoutBadge(p.status)}</td>
        <td>${formatTime(p.createdAt)}</td>
        <td>${formatTime(p.paidAt)}</td>
        <td class="num">${p.entryCount}</td>
        <td>${[p.method, p.reference].filter(Boolean).join(' · ') || '—'}</td>
      </tr>`,
    )}</tbody>
  </table></div>`;
}
