import type { FastifyPluginAsync } from 'fastify';
import type { AppServices } from '../../app-services.ts';
import { getAffiliateNames } from '../../modules/affiliates/affiliate.service.ts';
import type { ReferralRow } from '../../modules/referrals/referral.repository.ts';
import { getReferralPage } from '../../modules/referrals/referral.service.ts';
import { html, type SafeHtml } from '../html.ts';
import { currentProgram, pager, requestedPage, sendPage, splitPage } from './dashboard-page.ts';
import { formatTime, statusBadge } from './format.ts';
import { noErrors, readQuery, textField } from './forms.ts';
import { readAffiliateFilter } from './list-filters.ts';

type AffiliateNames = Map<string, { name: string; email: string }>;

/** Referred customers as a table (this page, and the affiliate's page without that column). */
export function referralTable(rows: ReferralRow[], names: AffiliateNames | null, base: string): SafeHtml {
  return html`<div class="table-wrap"><table>
    <thead><tr><th scope="col">Customer</th><th scope="col">E-mail</th>${names ? html`<th scope="col">Affiliate</th>` : ''}<th scope="col">Plan</th><th scope="col">Status</th><th scope="col">Referred</th></tr></thead>
    <tbody>${rows.map((r) => {
      const affiliate = names?.get(r.affiliate_id);
      return html`<tr>
        <td>${r.name}</td><td>${r.email}</td>
        ${names ? html`<td><a href="${base}/affiliates/${r.affiliate_id}">${affiliate?.name ?? 'Affiliate'}</a></td>` : ''}
        <td>${r.plan || '—'}</td><td>${statusBadge(r.status === 'active')}</td><td>${formatTime(r.created_at)}</td>
      </tr>`;
    })}</tbody>
  </table></div>`;
}

export const referralRoutes: FastifyPluginAsync<AppServices> = async (app, { db }) => {
  app.get('/referrals', async (request, reply) => {
    const { context, base } = currentProgram(request);
    const query = readQuery(request);
    const filter = await readAffiliateFilter(db, context, query.affiliate);
    const page = requestedPage(request);
    const rows = filter.error ? [] : await getReferralPage(db, context, { affiliateId: filter.affiliateId }, page);
    const list = splitPage(rows, page, `${base}/referrals`, { affiliate: query.affiliate });
    const names = await getAffiliateNames(db, context, list.items.map((r) => r.affiliate_id));
    const filtered = query.affiliate !== undefined && query.affiliate !== '';

    const body = html`
      <div class="page-head"><h1>Referrals</h1></div>
      <form class="filters" method="get" action="${base}/referrals" role="search">
        ${textField({ label: 'Affiliate e-mail', name: 'affiliate', type: 'search', value: query.affiliate, error: filter.error }, noErrors)}
        <button type="submit" class="secondary">Filter</button>
        ${filtered ? html`<a href="${base}/referrals">Show all</a>` : ''}
      </form>
      ${filter.label ? html`<p class="muted">Referrals of ${filter.label}.</p>` : ''}
      ${list.items.length === 0
        ? html`<div class="empty">${filtered
            ? html`<p>No referrals match this filter.</p>`
            : html`<p><strong>No referrals yet.</strong></p>
                <p>A referral is a customer an affiliate brought. Your site records one with <code>POST /api/v1/referrals</code>
                (see <a href="/docs">the API reference</a>) when someone signs up through an affiliate link or code, or an
                automation tool does it for you: <a href="${base}/apps">connect one</a>.</p>`}</div>`
        : referralTable(list.items, names, base)}
      ${pager(list)}`;
    return sendPage(db, request, reply, { title: 'Referrals', active: 'referrals', body });
  });
};
