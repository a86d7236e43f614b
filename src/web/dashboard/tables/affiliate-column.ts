import { html, type SafeHtml } from '../../html.ts';

// The "Affiliate" column of the lists that name an affiliate per row (sales, referrals): its
// name, linked to its page. The names come from one lookup for the page (getAffiliateNames).

/** Names and e-mails by affiliate id, for one page of a list. */
export type AffiliateNames = ReadonlyMap<string, { name: string; email: string }>;

export function affiliateCell(names: AffiliateNames, base: string, affiliateId: string): SafeHtml {
  return html`<td><a href="${base}/affiliates/${affiliateId}">${names.get(affiliateId)?.name ?? 'Affiliate'}</a></td>`;
}
