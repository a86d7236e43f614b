import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { AppServices } from '../../app-services.ts';
import { getAffiliateNames } from '../../modules/affiliates/affiliate.service.ts';
import type { ReferralFilter, ReferralRow } from '../../modules/referrals/referral.repository.ts';
import { CreateReferralBody } from '../../modules/referrals/referral.schema.ts';
import { countMatchingReferrals, createReferral, getReferralPage } from '../../modules/referrals/referral.service.ts';
import { html, type SafeHtml } from '../html.ts';
import { csrfField } from '../layout.ts';
import { currentProgram, doneFlash, pager, redirectDone, requestedPage, sendPage, splitPage } from './dashboard-page.ts';
import { formatCount, formatTime, statusBadge } from './format.ts';
import { apiBody, errorFlash, formErrorsOf, noErrors, optionalText, readForm, readQuery, selectField, textField, type FormErrors, type FormValues } from './forms.ts';
import { readAffiliateFilter, readDateRange } from './list-filters.ts';

// Referred customers on the dashboard: the list with search, filters and its count, and
// recording one by hand through the service POST /api/v1/referrals uses (same rules, same errors).

type AffiliateNames = Map<string, { name: string; email: string }>;

const STATUSES: [string, string][] = [
  ['', 'Any'],
  ['active', 'Active'],
  ['inactive', 'Inactive'],
];

const DONE = { recorded: 'Referral recorded.' };

/** Referred customers as a table (this page, and the affiliate's page without that column). */
export function referralTable(rows: ReferralRow[], names: AffiliateNames | null, base: string): SafeHtml {
  return html`<div class="table-wrap" role="region" aria-label="Referrals" tabindex="0"><table>
    <thead><tr><th scope="col">Customer</th><th scope="col">Status</th>${names ? html`<th scope="col">Affiliate</th>` : ''}<th scope="col">Referred</th><th scope="col">Plan</th></tr></thead>
    <tbody>${rows.map((r) => {
      const affiliate = names?.get(r.affiliate_id);
      return html`<tr>
        <td>${r.name}<br><span class="muted">${r.email}</span></td><td>${statusBadge(r.status === 'active')}</td>
        ${names ? html`<td><a href="${base}/affiliates/${r.affiliate_id}">${affiliate?.name ?? 'Affiliate'}</a></td>` : ''}
        <td>${formatTime(r.created_at)}</td><td>${r.plan || '—'}</td>
      </tr>`;
    })}</tbody>
  </table></div>`;
}

export const referralRoutes: FastifyPluginAsync<AppServices> = async (app, { db }) => {
  app.get('/referrals', async (request, reply) => {
    const { context, base } = currentProgram(request);
    const query = readQuery(request);
    const affiliate = await readAffiliateFilter(db, context, query.affiliate);
    const range = readDateRange(query.from, query.to);
    const q = (query.q ?? '').trim();
    const fieldErrors: Record<string, string> = { ...range.errors, ...(affiliate.error ? { affiliate: affiliate.error } : {}), ...(q.length > 200 ? { q: 'Search for at most 200 characters.' } : {}) };
    const status = query.status === 'active' || query.status === 'inactive' ? query.status : undefined;
    const filter: ReferralFilter = { affiliateId: affiliate.affiliateId, createdFrom: range.createdFrom, createdBefore: range.createdBefore, ...(q ? { search: q } : {}), ...(status ? { status } : {}) };
    const invalid = Object.keys(fieldErrors).length > 0;
    const page = requestedPage(request);
    const [rows, count] = invalid ? [[], 0] : await Promise.all([getReferralPage(db, context, filter, page), countMatchingReferrals(db, context, filter)]);
    const values = { q: q || undefined, affiliate: query.affiliate, status, from: query.from, to: query.to };
    const list = splitPage(rows, page, `${base}/referrals`, values);
    const names = await getAffiliateNames(db, context, list.items.map((r) => r.affiliate_id));
    const filtered = Object.values(values).some((v) => v !== undefined && v !== '');
    const errors: FormErrors = { fields: fieldErrors, message: '', status: 200 };

    const body = html`
      <div class="page-head"><h1>Referrals</h1><a class="button" href="${base}/referrals/new">Record a referral</a></div>
      <form class="filters" method="get" action="${base}/referrals" role="search" aria-label="Filter referrals">
        ${textField({ label: 'Customer name or e-mail', name: 'q', type: 'search', value: values.q }, errors)}
        ${textField({ label: 'Affiliate (e-mail, id or link)', name: 'affiliate', type: 'search', value: query.affiliate }, errors)}
        ${selectField({ label: 'Status', name: 'status', value: status ?? '', options: STATUSES }, noErrors)}
        ${textField({ label: 'From day (UTC)', name: 'from', type: 'date', value: query.from }, errors)}
        ${textField({ label: 'To day (UTC)', name: 'to', type: 'date', value: query.to }, errors)}
        <button type="submit" class="secondary">Apply</button>
        ${filtered ? html`<a href="${base}/referrals">Show all</a>` : ''}
      </form>
      ${affiliate.label ? html`<p class="muted">Referrals of ${affiliate.label}.</p>` : ''}
      ${count > 0 ? html`<p class="totals"><strong>${formatCount(count)} referral${count === 1 ? '' : 's'}</strong>${filtered ? ' match these filters' : ''}</p>` : ''}
      ${list.items.length === 0
        ? html`<div class="empty">${filtered
            ? html`<p>No referrals match these filters.</p>`
            : html`<p><strong>No referrals yet.</strong></p>
                <p>A referral is a customer an affiliate brought. Your site records one with <code>POST /api/v1/referrals</code>
                (see <a href="/docs">the API reference</a>) when someone signs up through an affiliate link or code, or an
                automation tool does it for you: <a href="${base}/apps">connect one</a>. You can also <a href="${base}/referrals/new">record one by hand</a>.</p>`}</div>`
        : referralTable(list.items, names, base)}
      ${pager(list)}`;
    return sendPage(db, request, reply, { title: 'Referrals', active: 'referrals', body, flash: doneFlash(request, DONE) });
  });

  function newReferralPage(request: FastifyRequest, reply: FastifyReply, values: FormValues = {}, errors: FormErrors = noErrors) {
    const { base } = currentProgram(request);
    const body = html`
      <div class="page-head"><h1>Record a referral</h1></div>
      <form class="card" method="post" action="${base}/referrals/new" novalidate>
        ${csrfField(request.session!)}
        <p class="lead">As <code>POST /api/v1/referrals</code> does: a customer who signed up through an affiliate.</p>
        ${textField({ label: "Customer's name", name: 'name', value: values.name, required: true }, errors)}
        ${textField({ label: "Customer's e-mail", name: 'email', type: 'email', value: values.email, required: true, attrs: html`autocomplete="off"` }, errors)}
        ${textField({ label: 'Your id for the customer', name: 'referredUserExternalId', value: values.referredUserExternalId, required: true, help: 'The user or customer id in your app (cus_123…).', attrs: html`autocomplete="off"` }, errors)}
        ${textField({ label: 'Affiliate (id or link)', name: 'affiliateId', value: values.affiliateId, help: 'Or give the affiliate’s e-mail, or a promotional code, below.', attrs: html`autocomplete="off"` }, errors)}
        ${textField({ label: "Affiliate's e-mail", name: 'affiliateEmail', type: 'email', value: values.affiliateEmail, attrs: html`autocomplete="off"` }, errors)}
        ${textField({ label: 'Promotional code', name: 'promoCode', value: values.promoCode }, errors)}
        ${textField({ label: 'Plan', name: 'plan', value: values.plan }, errors)}
        <div class="actions"><button type="submit">Record referral</button> <a href="${base}/referrals">Cancel</a></div>
      </form>`;
    return sendPage(db, request, reply, { title: 'Record a referral', active: 'referrals', body, status: errors.status, flash: errorFlash(errors) });
  }

  app.get('/referrals/new', (request, reply) => newReferralPage(request, reply));

  app.post('/referrals/new', async (request, reply) => {
    const { context, base } = currentProgram(request);
    const form = readForm(request);
    try {
      const body = apiBody(CreateReferralBody, {
          name: form.name ?? '',
          email: form.email ?? '',
          referredUserExternalId: form.referredUserExternalId ?? '',
          affiliateId: optionalText(form.affiliateId),
          affiliateEmail: optionalText(form.affiliateEmail),
          promoCode: optionalText(form.promoCode),
          plan: optionalText(form.plan),
      });
      await createReferral(db, context, body);
      return redirectDone(reply, `${base}/referrals`, 'recorded');
    } catch (error) {
      return newReferralPage(request, reply, form, formErrorsOf(error));
    }
  });
};
