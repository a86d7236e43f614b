import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { AppServices } from '../../app-services.ts';
import { getAffiliateNames } from '../../modules/affiliates/affiliate.service.ts';
import { CreateReferralBody } from '../../modules/referrals/referral.schema.ts';
import { countMatchingReferrals, createReferral, getReferralPage, type ListedReferral, type ReferralQuery } from '../../modules/referrals/referral.service.ts';
import { ApiError } from '../../domain/errors.ts';
import { html, type SafeHtml } from '../html.ts';
import { csrfField } from '../layout.ts';
import { currentProgram, doneFlash, listPage, pager, redirectDone, requestedPage, sendPage } from './dashboard-page.ts';
import { formatCount, formatTime, statusBadge } from './format.ts';
import { apiBody, errorFlash, formErrorsOf, noErrors, optionalText, readForm, readQuery, selectField, textField, withFieldError, type FormErrors, type FormValues } from './forms.ts';
import { affiliateChoices, affiliateField, readAffiliateField, type AffiliateFieldValue } from './affiliate-field.ts';
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

/** The form field a service error that names no field is about (a taken e-mail or id, an inactive affiliate, a code that does not apply). */
function referralErrorField(error: ApiError, form: FormValues): string | undefined {
  if (error.code === 'conflict') return 'email';
  if (error.code === 'duplicate_referral') return 'referredUserExternalId';
  if (error.code === 'affiliate_inactive') return optionalText(form.affiliate) ? 'affiliate' : 'promoCode';
  if (error.code === 'not_found') return optionalText(form.promoCode) ? 'promoCode' : 'affiliate';
  if (error.code.startsWith('promo_code_') || error.code === 'coupon_invalid') return 'promoCode';
  return undefined;
}

/** Referred customers as a table (this page, and the affiliate's page without that column). */
export function referralTable(referrals: ListedReferral[], names: AffiliateNames | null, base: string): SafeHtml {
  return html`<div class="table-wrap" role="region" aria-label="Referrals" tabindex="0"><table>
    <thead><tr><th scope="col">Customer</th><th scope="col">Status</th>${names ? html`<th scope="col">Affiliate</th>` : ''}<th scope="col">Referred</th><th scope="col">Plan</th></tr></thead>
    <tbody>${referrals.map((r) => {
      const affiliate = names?.get(r.affiliateId);
      return html`<tr>
        <td>${r.name}<br><span class="muted">${r.email}</span></td><td>${statusBadge(r.status === 'active')}</td>
        ${names ? html`<td><a href="${base}/affiliates/${r.affiliateId}">${affiliate?.name ?? 'Affiliate'}</a></td>` : ''}
        <td>${formatTime(r.createdAt)}</td><td>${r.plan || '—'}</td>
      </tr>`;
    })}</tbody>
  </table></div>`;
}

export const referralRoutes: FastifyPluginAsync<AppServices> = async (app, { db, referralMade }) => {
  app.get('/referrals', async (request, reply) => {
    const { context, base } = currentProgram(request);
    const query = readQuery(request);
    const affiliate = await readAffiliateFilter(db, context, query.affiliate);
    const range = readDateRange(query.from, query.to);
    const q = (query.q ?? '').trim();
    const fieldErrors: Record<string, string> = { ...range.errors, ...(affiliate.error ? { affiliate: affiliate.error } : {}), ...(q.length > 200 ? { q: 'Search for at most 200 characters.' } : {}) };
    const status = query.status === 'active' || query.status === 'inactive' ? query.status : undefined;
    const filter: ReferralQuery = { affiliateId: affiliate.affiliateId, createdFrom: range.createdFrom, createdBefore: range.createdBefore, ...(q ? { search: q } : {}), ...(status ? { status } : {}) };
    const invalid = Object.keys(fieldErrors).length > 0;
    const page = requestedPage(request);
    const [found, count] = invalid ? [{ items: [] }, 0] : await Promise.all([getReferralPage(db, context, filter, page), countMatchingReferrals(db, context, filter)]);
    const values = { q: q || undefined, affiliate: query.affiliate, status, from: query.from, to: query.to };
    const list = listPage(found, page, `${base}/referrals`, values);
    const names = await getAffiliateNames(db, context, list.items.map((r) => r.affiliateId));
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

  async function newReferralPage(request: FastifyRequest, reply: FastifyReply, values: FormValues = {}, errors: FormErrors = noErrors, affiliate?: AffiliateFieldValue) {
    const { base, context } = currentProgram(request);
    const suggestions = affiliate?.picker ? [] : (await affiliateChoices(db, context)).rows;
    const body = html`
      <div class="page-head"><h1>Record a referral</h1></div>
      <form class="card" method="post" action="${base}/referrals/new" novalidate>
        ${csrfField(request.session!)}
        <p class="lead">As <code>POST /api/v1/referrals</code> does: a customer who signed up through an affiliate.</p>
        ${textField({ label: "Customer's name", name: 'name', value: values.name, required: true }, errors)}
        ${textField({ label: "Customer's e-mail", name: 'email', type: 'email', value: values.email, required: true, attrs: html`autocomplete="off"` }, errors)}
        ${textField({ label: 'Your id for the customer', name: 'referredUserExternalId', value: values.referredUserExternalId, required: true, help: 'The user or customer id in your app (cus_123…).', attrs: html`autocomplete="off"` }, errors)}
        ${affiliateField({ label: 'Affiliate', name: 'affiliate', help: 'Their e-mail, one of their links or their id — or type a name and choose from the list. Leave it empty when a promotional code below names the affiliate.', value: affiliate ?? { text: values.affiliate ?? '' }, suggestions, searchUrl: `${base}/affiliates/choices` }, errors)}
        ${textField({ label: 'Promotional code', name: 'promoCode', value: values.promoCode, help: 'The code the customer used: it is redeemed, and credits its affiliate when none is named above.' }, errors)}
        ${textField({ label: 'Plan', name: 'plan', value: values.plan }, errors)}
        <div class="actions"><button type="submit">Record referral</button> <a href="${base}/referrals">Cancel</a></div>
      </form>`;
    return sendPage(db, request, reply, { title: 'Record a referral', active: 'referrals', body, status: errors.status, flash: errorFlash(errors) });
  }

  app.get('/referrals/new', (request, reply) => newReferralPage(request, reply));

  // The affiliate is named as a person knows it (affiliate-field.ts) and handed to the service as
  // POST /referrals's affiliateId; everything else is the API's body, checked by its schema.
  app.post('/referrals/new', async (request, reply) => {
    const { context, base } = currentProgram(request);
    const form = readForm(request);
    const affiliate = await readAffiliateField(db, context, form, 'affiliate');
    let errors: FormErrors;
    try {
      const body = apiBody(CreateReferralBody, {
        name: form.name ?? '',
        email: form.email ?? '',
        referredUserExternalId: form.referredUserExternalId ?? '',
        affiliateId: affiliate.named?.apiValue,
        promoCode: optionalText(form.promoCode),
        plan: optionalText(form.plan),
      });
      if (!affiliate.error) {
        await createReferral(db, context, body, referralMade);
        return redirectDone(reply, `${base}/referrals`, 'recorded');
      }
      errors = noErrors;
    } catch (error) {
      errors = formErrorsOf(error, { affiliateId: 'affiliate', affiliateEmail: 'affiliate' });
      const field = error instanceof ApiError ? referralErrorField(error, form) : undefined;
      if (field) errors = withFieldError(errors, field, errors.message);
    }
    // Nobody named: the service's "affiliateId, affiliateEmail or promoCode is required", said for this form.
    if (errors.fields.affiliate && affiliate.text === '' && !optionalText(form.promoCode)) errors.fields.affiliate = 'Name the affiliate, or give a promotional code below.';
    if (affiliate.error) errors = withFieldError(errors, 'affiliate', affiliate.error);
    return newReferralPage(request, reply, form, errors, affiliate);
  });
};
