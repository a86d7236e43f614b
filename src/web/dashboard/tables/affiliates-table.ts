import type { Affiliate } from '../../../modules/affiliates/affiliate.schema.ts';
import { html, type SafeHtml } from '../../html.ts';
import { formatAmount, formatTime, statusBadge } from '../format.ts';

// Affiliates as a table, the key columns first (they stay in view on a phone).

export function affiliateTable(affiliates: Affiliate[], base: string, currency: string): SafeHtml {
  return html`<div class="table-wrap" role="region" aria-label="Affiliates" tabindex="0"><table>
    <thead><tr><th scope="col">Name</th><th scope="col" class="num">Commission earned</th><th scope="col">Status</th><th scope="col" class="num">Referrals</th><th scope="col">Link</th><th scope="col">E-mail</th><th scope="col">Joined</th></tr></thead>
    <tbody>${affiliates.map(
      (a) => html`<tr>
        <td><a href="${base}/affiliates/${a.id}">${a.firstName} ${a.lastName}</a></td>
        <td class="num">${formatAmount(a.totalCommissionEarned, currency)}</td>
        <td>${statusBadge(a.status === 'active')}</td>
        <td class="num">${a.numberOfReferredUsers}</td>
        <td><code>${a.link}</code></td><td>${a.email}</td>
        <td>${formatTime(a.createdAt)}</td>
      </tr>`,
    )}</tbody>
  </table></div>`;
}
