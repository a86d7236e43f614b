import type { ListedReferral } from '../../../modules/referrals/referral.service.ts';
import { html, type SafeHtml } from '../../html.ts';
import { formatTime, statusBadge } from '../format.ts';
import { affiliateCell, type AffiliateNames } from './affiliate-column.ts';

// Referred customers as a table: the referrals list (with the affiliate column) and an
// affiliate's page (without).

/** `names`: the affiliates of the rows, for the affiliate column (null: no such column). */
export function referralTable(referrals: ListedReferral[], names: AffiliateNames | null, base: string): SafeHtml {
  return html`<div class="table-wrap" role="region" aria-label="Referrals" tabindex="0"><table>
    <thead><tr><th scope="col">Customer</th><th scope="col">Status</th>${names ? html`<th scope="col">Affiliate</th>` : ''}<th scope="col">Referred</th><th scope="col">Plan</th></tr></thead>
    <tbody>${referrals.map(
      (r) => html`<tr>
        <td>${r.name}<br><span class="muted">${r.email}</span></td><td>${statusBadge(r.status === 'active')}</td>
        ${names ? affiliateCell(names, base, r.affiliateId) : ''}
        <td>${formatTime(r.createdAt)}</td><td>${r.plan || '—'}</td>
      </tr>`,
    )}</tbody>
  </table></div>`;
}
