import type { Affiliate } from '../../modules/affiliates/affiliate.schema.ts';
import type { PendingSignUp } from '../../modules/affiliates/affiliate.service.ts';
import type { AffiliateLink } from '../../modules/affiliates/link.schema.ts';
import type { PromotionalCode } from '../../modules/coupons/promotional-code.schema.ts';
import type { getLedgerBalance } from '../../modules/ledger/commission.service.ts';
import type { Payout } from '../../modules/payouts/payout.schema.ts';
import type { ListedReferral } from '../../modules/referrals/referral.service.ts';
import type { Sale } from '../../modules/sales/sale.schema.ts';
import type { Page } from '../../db/keyset.ts';
import type { MatchCount } from '../../db/text-search.ts';
import { html, type SafeHtml } from '../html.ts';
import { csrfField, postButton } from '../layout.ts';
import { pager, type DashboardSession, type ListPage } from './dashboard-page.ts';
import { formatAmount, formatConversion, formatCount, formatMatchCount, formatRate, formatTime, statusBadge } from './format.ts';
import { noErrors, selectField, textField, type FormErrors, type FormValues } from './forms.ts';
import { affiliateTable } from './tables/affiliates-table.ts';
import { payoutTable } from './tables/payouts-table.ts';
import { referralTable } from './tables/referrals-table.ts';
import { saleTable } from './tables/sales-table.ts';

// The affiliates pages as pure functions of what they show: the list (with the approval queue
// and its filters), the new-affiliate form, an affiliate's page (profile, balance, links,
// referrals, sales, payouts, codes) and its edit form.

export interface AffiliateListView {
  base: string;
  session: DashboardSession;
  programName: string;
  currency: string;
  /** Portal sign-ups waiting (the oldest `shown`), and how many wait. */
  queue: { signUps: PendingSignUp[]; count: number; shown: number };
  filters: { q: string; searchError?: string; status?: string; sort: string; sorts: [value: string, label: string][] };
  /** The filters' query string, for the CSV link. */
  csvQuery: string;
  csvRows: number;
  count: MatchCount;
  list: ListPage<Affiliate>;
}

function approvalQueue(v: AffiliateListView): SafeHtml | string {
  const { base, session, queue } = v;
  if (queue.count === 0) return '';
  return html`<section class="card" aria-labelledby="approval-queue">
            <h2 id="approval-queue">Waiting for approval <span class="badge" data-stat="pending-signups">${queue.count}</span></h2>
            <p class="muted">Sign-ups from your portal. Approving makes the affiliate active and e-mails them their link.${queue.count > queue.shown ? ` The oldest ${queue.shown} are shown.` : ''}</p>
            <div class="table-wrap" role="region" aria-label="Waiting for approval" tabindex="0"><table>
              <thead><tr><th scope="col">Name</th><th scope="col">E-mail</th><th scope="col">Signed up</th><th scope="col"><span class="visually-hidden">Decision</span></th></tr></thead>
              <tbody>${queue.signUps.map(
                (a) => html`<tr>
                  <td><a href="${base}/affiliates/${a.id}">${a.firstName} ${a.lastName}</a></td>
                  <td>${a.email}</td>
                  <td>${formatTime(a.createdAt)}</td>
                  <td>${postButton(session, `${base}/affiliates/${a.id}/approval`, 'Approve', { className: 'small', ariaLabel: `Approve ${a.firstName} ${a.lastName}`, fields: html`<input type="hidden" name="approval" value="approved">` })}
                    ${postButton(session, `${base}/affiliates/${a.id}/approval`, 'Reject', { className: 'danger small', ariaLabel: `Reject ${a.firstName} ${a.lastName}`, fields: html`<input type="hidden" name="approval" value="rejected">` })}</td>
                </tr>`,
              )}</tbody>
            </table></div>
          </section>`;
}

export function affiliateListBody(v: AffiliateListView): SafeHtml {
  const { base, filters, count, list } = v;
  const filtered = filters.q !== '' || filters.status !== undefined;
  return html`
      <div class="page-head"><h1>Affiliates</h1><a class="button" href="${base}/affiliates/new">New affiliate</a></div>
      ${approvalQueue(v)}
      <form class="filters" method="get" action="${base}/affiliates" role="search" aria-label="Filter affiliates">
        ${textField({ label: 'Name or e-mail', name: 'q', type: 'search', value: filters.q, error: filters.searchError }, noErrors)}
        ${selectField({ label: 'Status', name: 'status', value: filters.status ?? '', options: [['', 'Any'], ['active', 'Active'], ['inactive', 'Inactive']] }, noErrors)}
        ${selectField({ label: 'Sort by', name: 'sort', value: filters.sort, options: filters.sorts }, noErrors)}
        <button type="submit" class="secondary">Apply</button>
        ${filtered || filters.sort !== 'newest' ? html`<a href="${base}/affiliates">Show all</a>` : ''}
      </form>
      ${count !== 0
        ? html`<p class="totals"><strong>${formatMatchCount(count, 'affiliate')}</strong>${filtered ? ' match these filters' : ''} · <a href="${base}/affiliates.csv${v.csvQuery ? `?${v.csvQuery}` : ''}" download>Download CSV${typeof count !== 'number' || count > v.csvRows ? ` (the first ${formatCount(v.csvRows)})` : ''}</a></p>`
        : ''}
      ${list.items.length === 0
        ? html`<div class="empty">${filtered
            ? html`<p>No affiliate matches these filters.</p>`
            : html`<p><strong>No affiliates yet.</strong></p>
                <p>Affiliates promote ${v.programName} with their own link and earn a commission on the sales they bring.
                <a href="${base}/affiliates/new">Add the first one</a>, or let your site sign them up with <code>POST /api/v1/affiliates</code>.</p>`}</div>`
        : affiliateTable(list.items, base, v.currency)}
      ${pager(list)}`;
}

const rateHelp = (defaultRate: number) => `Empty: the program's default, ${formatRate(defaultRate)}.`;

function createFields(values: FormValues, errors: FormErrors, defaultRate: number): SafeHtml {
  return html`<div class="form-grid">
    ${textField({ label: 'First name', name: 'firstName', value: values.firstName, required: true, autocomplete: 'off' }, errors)}
    ${textField({ label: 'Last name', name: 'lastName', value: values.lastName, required: true, autocomplete: 'off' }, errors)}
    ${textField({ label: 'E-mail', name: 'email', type: 'email', value: values.email, required: true, autocomplete: 'off' }, errors)}
    ${textField({ label: 'Commission rate (%)', name: 'commissionRate', type: 'number', value: values.commissionRate, help: rateHelp(defaultRate), attrs: html`min="0" max="100" step="any" inputmode="decimal"` }, errors)}
    ${textField({ label: 'Link', name: 'affiliateLink', value: values.affiliateLink, help: 'Optional: letters, digits and hyphens, such as jane. Empty: generated from the first name.', autocomplete: 'off' }, errors)}
    ${textField({ label: 'Payout e-mail', name: 'payoutEmail', type: 'email', value: values.payoutEmail, help: 'Empty: the e-mail above.', autocomplete: 'off' }, errors)}
    ${textField({ label: 'Payment method', name: 'paymentMethod', value: values.paymentMethod, help: 'Such as paypal or bank transfer. Empty: none yet.', autocomplete: 'off' }, errors)}
  </div>`;
}

function editFields(values: FormValues, errors: FormErrors, defaultRate: number): SafeHtml {
  return html`<div class="form-grid">
    ${textField({ label: 'First name', name: 'firstName', value: values.firstName, required: true, autocomplete: 'off' }, errors)}
    ${textField({ label: 'Last name', name: 'lastName', value: values.lastName, required: true, autocomplete: 'off' }, errors)}
    ${textField({ label: 'Commission rate (%)', name: 'commissionRate', type: 'number', value: values.commissionRate, help: rateHelp(defaultRate), attrs: html`min="0" max="100" step="any" inputmode="decimal"` }, errors)}
    ${textField({ label: 'Payout e-mail', name: 'payoutEmail', type: 'email', value: values.payoutEmail, required: true, autocomplete: 'off' }, errors)}
    ${textField({ label: 'Payment method', name: 'paymentMethod', value: values.paymentMethod, required: true, autocomplete: 'off' }, errors)}
    ${selectField({ label: 'Status', name: 'status', value: values.status, options: [['active', 'Active'], ['inactive', 'Inactive']], help: 'Inactive affiliates keep their history.' }, errors)}
  </div>`;
}

export interface AffiliateFormView {
  base: string;
  session: DashboardSession;
  /** The program's default commission rate, in percent (the rate field's hint). */
  defaultRate: number;
  values: FormValues;
  errors: FormErrors;
}

export function newAffiliateBody(v: AffiliateFormView): SafeHtml {
  return html`
      <div class="page-head"><h1>New affiliate</h1></div>
      <form class="card" method="post" action="${v.base}/affiliates" novalidate>
        ${csrfField(v.session)}
        ${createFields(v.values, v.errors, v.defaultRate)}
        <div class="actions"><button type="submit">Create affiliate</button> <a href="${v.base}/affiliates">Cancel</a></div>
      </form>`;
}

/** An affiliate with its own commission rate (null: the program's default). */
export type AffiliateProfile = Affiliate & { ownCommissionRate: number | null };

export function editAffiliateBody(v: AffiliateFormView & { affiliate: AffiliateProfile }): SafeHtml {
  const { base, affiliate } = v;
  return html`
      <div class="page-head"><h1>Edit ${affiliate.firstName} ${affiliate.lastName}</h1></div>
      <form class="card" method="post" action="${base}/affiliates/${affiliate.id}" novalidate>
        ${csrfField(v.session)}
        <p class="muted">E-mail: ${affiliate.email} (it identifies the affiliate and cannot change).</p>
        ${editFields(v.values, v.errors, v.defaultRate)}
        <div class="actions"><button type="submit">Save changes</button> <a href="${base}/affiliates/${affiliate.id}">Cancel</a></div>
      </form>`;
}

export interface AffiliateDetailView {
  base: string;
  session: DashboardSession;
  currency: string;
  affiliate: AffiliateProfile;
  balance: Awaited<ReturnType<typeof getLedgerBalance>>;
  links: AffiliateLink[];
  /** The newest few of each; `next` says more exist. */
  referrals: Page<ListedReferral>;
  sales: Page<Sale>;
  payouts: Page<Payout>;
  codes: Page<PromotionalCode>;
  /** The "Another link" form, as posted when it failed. */
  linkValue: string;
  linkErrors: FormErrors;
}

function profileSection(v: AffiliateDetailView): SafeHtml {
  const { affiliate } = v;
  const money = (amount: number) => formatAmount(amount, v.currency);
  return html`<section class="card" aria-labelledby="profile"><h2 id="profile" class="visually-hidden">Profile</h2>
        <dl class="details">
          <dt>Status</dt><dd>${statusBadge(affiliate.status === 'active')}</dd>
          <dt>E-mail</dt><dd>${affiliate.email}</dd>
          <dt>Commission rate</dt><dd>${formatRate(affiliate.commissionRate)}${affiliate.ownCommissionRate === null ? html` <span class="muted">(program default)</span>` : ''}</dd>
          <dt>Commission earned</dt><dd data-stat="earned">${money(affiliate.totalCommissionEarned)} <span class="muted">(all time, net of refunds)</span></dd>
          <dt>Clicks</dt><dd data-stat="clicks">${formatCount(affiliate.numberOfClicks)}</dd>
          <dt>Referred customers</dt><dd data-stat="referrals">${formatCount(affiliate.numberOfReferredUsers)}</dd>
          <dt>Conversion rate</dt><dd><span data-stat="conversion">${formatConversion(affiliate.numberOfReferredUsers, affiliate.numberOfClicks)}</span> <span class="muted">(referred customers ÷ clicks)</span></dd>
          <dt>Payout</dt><dd>${affiliate.payoutEmail} · ${affiliate.paymentMethod}</dd>
          <dt>Joined</dt><dd>${formatTime(affiliate.createdAt)}</dd>
          <dt>Id</dt><dd><code>${affiliate.id}</code></dd>
        </dl>
      </section>`;
}

function balanceSection(v: AffiliateDetailView): SafeHtml {
  const { balance } = v;
  const money = (amount: number) => formatAmount(amount, v.currency);
  return html`<section class="card" aria-labelledby="balance"><h2 id="balance">Commission balance</h2>
        <dl class="details">
          <dt>In the hold</dt><dd data-stat="pending">${money(balance.pending)}</dd>
          <dt>Due</dt><dd data-stat="due">${money(balance.due)}${balance.due !== balance.dueOutsidePayouts ? html` <span class="muted">(${money(balance.due - balance.dueOutsidePayouts)} in a pending payout)</span>` : ''}</dd>
          <dt>Paid</dt><dd data-stat="paid">${money(balance.paid)}</dd>
          ${balance.dueOutsidePayouts < 0 ? html`<dt>Negative balance carried</dt><dd data-stat="carried">${money(balance.dueOutsidePayouts)} <span class="muted">(refunds after payment; taken off the next payout)</span></dd>` : ''}
        </dl>
        <p><a href="${v.base}/payouts">Payouts →</a></p>
      </section>`;
}

function linksSection(v: AffiliateDetailView): SafeHtml {
  const { base, affiliate } = v;
  return html`<h2 id="links">Links</h2>
      <div class="table-wrap" role="region" aria-label="Links" tabindex="0"><table aria-labelledby="links">
        <thead><tr><th scope="col">Link</th><th scope="col">URL</th><th scope="col" class="num">Clicks</th><th scope="col" class="num">Referrals</th><th scope="col" class="num">Sales</th><th scope="col" class="num">Revenue</th></tr></thead>
        <tbody>${v.links.map(
          (l) => html`<tr><td><code>${l.link}</code>${l.link === affiliate.link ? html` <span class="badge">own link</span>` : ''}</td>
            <td>${l.fullURLs.map((u) => html`<a href="${u.fullUrl}" rel="noreferrer">${u.fullUrl}</a><br>`)}</td>
            <td class="num">${formatCount(l.clicks)}</td><td class="num">${l.referrals}</td><td class="num">${l.sales}</td><td class="num">${formatAmount(l.totalRevenue, v.currency)}</td></tr>`,
        )}</tbody>
      </table></div>
      <form class="filters" method="post" action="${base}/affiliates/${affiliate.id}/links" novalidate>
        ${csrfField(v.session)}
        ${textField({ label: 'Another link', name: 'link', value: v.linkValue, help: 'Letters, digits and hyphens. Empty: generated.', autocomplete: 'off' }, v.linkErrors)}
        <button type="submit" class="secondary">Add link</button>
      </form>`;
}

function codesSection(v: AffiliateDetailView): SafeHtml {
  const { base, codes } = v;
  return html`<h2>Promotional codes</h2>
      ${codes.items.length === 0
        ? html`<p class="empty">No codes assigned. <a href="${base}/coupons">Assign one on Coupons &amp; codes</a>.</p>`
        : html`<div class="table-wrap" role="region" aria-label="Promotional codes" tabindex="0"><table><thead><tr><th scope="col">Code</th><th scope="col">Coupon</th><th scope="col">Status</th><th scope="col" class="num">Redeemed</th></tr></thead>
            <tbody>${codes.items.map((c) => html`<tr><td><a href="${base}/coupons/codes/${c.id}"><code>${c.code}</code></a></td><td>${c.coupon.name}</td><td>${statusBadge(c.active)}</td><td class="num">${c.timesRedeemed}${c.maxRedemptions === null ? '' : ` / ${c.maxRedemptions}`}</td></tr>`)}</tbody></table></div>`}`;
}

export function affiliateDetailBody(v: AffiliateDetailView): SafeHtml {
  const { base, affiliate, referrals, sales, payouts } = v;
  const active = affiliate.status === 'active';
  const more = (page: Page<unknown>, href: string, label: string) => (page.next !== undefined ? html`<p><a href="${href}">${label}</a></p>` : '');
  return html`
      <div class="page-head">
        <h1>${affiliate.firstName} ${affiliate.lastName}</h1>
        <div class="actions">
          <a class="button secondary" href="${base}/affiliates/${affiliate.id}/edit">Edit</a>
          <form method="post" action="${base}/affiliates/${affiliate.id}/status" class="inline"${active ? html` data-confirm="Deactivate ${affiliate.firstName} ${affiliate.lastName}? Their links and codes stop crediting them."` : ''}>
            ${csrfField(v.session)}<input type="hidden" name="status" value="${active ? 'inactive' : 'active'}">
            <button type="submit" class="${active ? 'danger' : 'secondary'}">${active ? 'Deactivate' : 'Reactivate'}</button>
          </form>
        </div>
      </div>
      ${profileSection(v)}

      ${balanceSection(v)}

      ${linksSection(v)}

      <h2>Referrals</h2>
      ${referrals.items.length === 0 ? html`<p class="empty">No referred customers yet.</p>` : referralTable(referrals.items, null, base)}
      ${more(referrals, `${base}/referrals?affiliate=${affiliate.id}`, 'All referrals of this affiliate →')}

      <h2>Sales</h2>
      ${sales.items.length === 0 ? html`<p class="empty">No sales yet.</p>` : saleTable(sales.items, null, base, v.currency)}
      <p><a href="${base}/sales?affiliate=${affiliate.id}">${sales.next !== undefined ? 'All sales of this affiliate →' : 'Filter sales by date →'}</a></p>

      <h2>Payouts</h2>
      ${payouts.items.length === 0 ? html`<p class="empty">No payouts yet.</p>` : payoutTable(payouts.items, base, false)}

      ${codesSection(v)}`;
}
