import type { Affiliate } from '../../modules/affiliates/affiliate.schema.ts';
import type { ListedReferral } from '../../modules/referrals/referral.service.ts';
import { html, type SafeHtml } from '../html.ts';
import { csrfField } from '../layout.ts';
import { affiliateField, type AffiliateFieldValue } from './affiliate-field.ts';
import { pager, type DashboardSession, type ListPage } from './dashboard-page.ts';
import type { MatchCount } from '../../db/text-search.ts';
import { formatMatchCount } from './format.ts';
import { noErrors, selectField, textField, type FormErrors, type FormValues } from './forms.ts';
import type { AffiliateNames } from './tables/affiliate-column.ts';
import { referralTable } from './tables/referrals-table.ts';

// The referrals pages as pure functions of what they show: the list (filters and count) and
// the form that records a referral.

export interface ReferralListView {
  base: string;
  /** The query string's values, kept in the form. */
  values: Record<string, string | undefined>;
  /** Why a filter names nothing, beside its field. */
  errors: FormErrors;
  statuses: [value: string, label: string][];
  /** Whose referrals are listed, when the affiliate filter names one. */
  label?: string;
  filtered: boolean;
  count: MatchCount;
  list: ListPage<ListedReferral>;
  names: AffiliateNames;
}

export function referralListBody(v: ReferralListView): SafeHtml {
  const { base, values, errors, count, list } = v;
  return html`
      <div class="page-head"><h1>Referrals</h1><a class="button" href="${base}/referrals/new">Record a referral</a></div>
      <form class="filters" method="get" action="${base}/referrals" role="search" aria-label="Filter referrals">
        ${textField({ label: 'Customer name or e-mail', name: 'q', type: 'search', value: values.q }, errors)}
        ${textField({ label: 'Affiliate (e-mail, id or link)', name: 'affiliate', type: 'search', value: values.affiliate }, errors)}
        ${selectField({ label: 'Status', name: 'status', value: values.status ?? '', options: v.statuses }, noErrors)}
        ${textField({ label: 'From day (UTC)', name: 'from', type: 'date', value: values.from }, errors)}
        ${textField({ label: 'To day (UTC)', name: 'to', type: 'date', value: values.to }, errors)}
        <button type="submit" class="secondary">Apply</button>
        ${v.filtered ? html`<a href="${base}/referrals">Show all</a>` : ''}
      </form>
      ${v.label ? html`<p class="muted">Referrals of ${v.label}.</p>` : ''}
      ${count !== 0 ? html`<p class="totals"><strong>${formatMatchCount(count, 'referral')}</strong>${v.filtered ? ' match these filters' : ''}</p>` : ''}
      ${list.items.length === 0
        ? html`<div class="empty">${v.filtered
            ? html`<p>No referrals match these filters.</p>`
            : html`<p><strong>No referrals yet.</strong></p>
                <p>A referral is a customer an affiliate brought. Your site records one with <code>POST /api/v1/referrals</code>
                (see <a href="/docs">the API reference</a>) when someone signs up through an affiliate link or code, or an
                automation tool does it for you: <a href="${base}/apps">connect one</a>. You can also <a href="${base}/referrals/new">record one by hand</a>.</p>`}</div>`
        : referralTable(list.items, v.names, base)}
      ${pager(list)}`;
}

export interface NewReferralView {
  base: string;
  session: DashboardSession;
  values: FormValues;
  errors: FormErrors;
  /** The affiliate field as posted (its picker, when the text named nobody exactly). */
  affiliate?: AffiliateFieldValue;
  /** The affiliate field's suggestions. */
  suggestions: Affiliate[];
}

export function newReferralBody(v: NewReferralView): SafeHtml {
  const { base, values, errors } = v;
  return html`
      <div class="page-head"><h1>Record a referral</h1></div>
      <form class="card" method="post" action="${base}/referrals/new" novalidate>
        ${csrfField(v.session)}
        <p class="lead">As <code>POST /api/v1/referrals</code> does: a customer who signed up through an affiliate.</p>
        ${textField({ label: "Customer's name", name: 'name', value: values.name, required: true }, errors)}
        ${textField({ label: "Customer's e-mail", name: 'email', type: 'email', value: values.email, required: true, attrs: html`autocomplete="off"` }, errors)}
        ${textField({ label: 'Your id for the customer', name: 'referredUserExternalId', value: values.referredUserExternalId, required: true, help: 'The user or customer id in your app (cus_123…).', attrs: html`autocomplete="off"` }, errors)}
        ${affiliateField({ label: 'Affiliate', name: 'affiliate', help: 'Their e-mail, one of their links or their id — or type a name and choose from the list. Leave it empty when a promotional code below names the affiliate.', value: v.affiliate ?? { text: values.affiliate ?? '' }, suggestions: v.suggestions, searchUrl: `${base}/affiliates/choices` }, errors)}
        ${textField({ label: 'Promotional code', name: 'promoCode', value: values.promoCode, help: 'The code the customer used: it is redeemed, and credits its affiliate when none is named above.' }, errors)}
        ${textField({ label: 'Plan', name: 'plan', value: values.plan }, errors)}
        <div class="actions"><button type="submit">Record referral</button> <a href="${base}/referrals">Cancel</a></div>
      </form>`;
}
