import type { Affiliate } from '../../modules/affiliates/affiliate.schema.ts';
import type { ListedCoupon } from '../../modules/coupons/coupon.service.ts';
import type { Coupon, NestedPromotionalCode, PromotionalCode } from '../../modules/coupons/promotional-code.schema.ts';
import { html, type SafeHtml } from '../html.ts';
import { csrfField, postButton } from '../layout.ts';
import { pager, type DashboardSession, type ListPage } from './dashboard-page.ts';
import { formatAmount, formatCount, formatRedeemed, formatTime, statusBadge } from './format.ts';
import { checkboxField, selectField, textField, type FormErrors, type FormValues } from './forms.ts';

// The coupons pages as pure functions of what they show: the coupons with their newest codes,
// a coupon's codes (all of them, a page at a time), the new-coupon form, and the forms that add
// and edit a promotional code.

function discountOf(coupon: Coupon): string {
  const amount = coupon.couponType === 'PERCENTAGE' ? `${coupon.percentOff} % off` : `${formatAmount(coupon.amountOff ?? 0, coupon.currency ?? 'USD')} off`;
  const duration = coupon.duration === 'repeating' ? `for ${coupon.durationInMonths} months` : coupon.duration;
  return `${amount}, ${duration}`;
}

function codeState(code: NestedPromotionalCode, now: number): SafeHtml {
  if (!code.active) return statusBadge(false);
  if (code.expiresAt !== null && Date.parse(code.expiresAt) <= now) return html`<span class="badge bad">Expired</span>`;
  if (code.maxRedemptions !== null && code.timesRedeemed >= code.maxRedemptions) return html`<span class="badge bad">Used up</span>`;
  return statusBadge(true);
}

export interface CouponListView {
  base: string;
  session: DashboardSession;
  /** The program's "now", in epoch milliseconds: which codes have expired. */
  now: number;
  list: ListPage<ListedCoupon>;
}

/** What a table of codes needs besides its codes. */
interface CodeTableView {
  base: string;
  session: DashboardSession;
  now: number;
}

function codeRows(v: CodeTableView, codes: NestedPromotionalCode[], label: string): SafeHtml {
  const { base } = v;
  return html`<div class="table-wrap" role="region" aria-label="${label}" tabindex="0"><table>
            <thead><tr><th scope="col">Code</th><th scope="col">Affiliate</th><th scope="col">Status</th><th scope="col">Expires</th><th scope="col" class="num">Redeemed</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
            <tbody>${codes.map(
              (code) => html`<tr>
                <td><code>${code.code}</code></td>
                <td>${code.affiliate ? html`<a href="${base}/affiliates/${code.affiliate.id}">${code.affiliate.firstName} ${code.affiliate.lastName}</a>` : html`<span class="muted">Not assigned</span>`}</td>
                <td>${codeState(code, v.now)}</td>
                <td>${formatTime(code.expiresAt, 'Never')}</td>
                <td class="num">${code.timesRedeemed}${code.maxRedemptions === null ? '' : ` / ${code.maxRedemptions}`}</td>
                <td><div class="actions">
                  <a href="${base}/coupons/codes/${code.id}" aria-label="Edit ${code.code}">Edit</a>
                  ${code.active
                    ? postButton(v.session, `${base}/coupons/codes/${code.id}/deactivate`, 'Deactivate', { className: 'link', ariaLabel: `Deactivate ${code.code}`, confirm: `Deactivate ${code.code}? It can no longer be redeemed.` })
                    : ''}
                </div></td>
              </tr>`,
            )}</tbody>
          </table></div>`;
}

function couponCard(v: CouponListView, coupon: ListedCoupon): SafeHtml {
  const { base } = v;
  return html`<section class="card" aria-labelledby="coupon-${coupon.id}">
      <div class="page-head">
        <h2 id="coupon-${coupon.id}">${coupon.name}</h2>
        <a class="button small" href="${base}/coupons/${coupon.id}/codes/new">Add a code</a>
      </div>
      <p>${discountOf(coupon)} · ${statusBadge(coupon.valid, ['Valid', 'Not valid'])} · ${formatRedeemed(coupon.timesRedeemed, coupon.maxRedemptions)}${coupon.redeemBy ? html` · until ${formatTime(coupon.redeemBy)}` : ''}</p>
      ${coupon.promotionalCodes.length === 0
        ? html`<p class="muted">No codes yet. Customers redeem a coupon through a code: <a href="${base}/coupons/${coupon.id}/codes/new">add one</a> for each affiliate.</p>`
        : codeRows(v, coupon.promotionalCodes, 'Coupons and codes')}
      ${coupon.promotionalCodesCount > coupon.promotionalCodes.length
        ? html`<p class="muted">The ${coupon.promotionalCodes.length} newest of ${formatCount(coupon.promotionalCodesCount)} codes. <a href="${base}/coupons/${coupon.id}">All ${formatCount(coupon.promotionalCodesCount)} codes of ${coupon.name}</a></p>`
        : ''}
    </section>`;
}

export function couponListBody(v: CouponListView): SafeHtml {
  const { base, list } = v;
  return html`
      <div class="page-head"><h1>Coupons &amp; promotional codes</h1><a class="button" href="${base}/coupons/new">New coupon</a></div>
      ${list.items.length === 0
        ? html`<div class="empty"><p><strong>No coupons yet.</strong></p>
            <p>A coupon is a discount (such as 20 % off); its promotional codes are what customers type at checkout.
            Give each affiliate their own code and every sale with it is credited to them.
            <a href="${base}/coupons/new">Create the first coupon</a>.</p></div>`
        : list.items.map((coupon) => couponCard(v, coupon))}
      ${pager(list)}`;
}

export interface CouponCodesView {
  base: string;
  session: DashboardSession;
  /** The program's "now", in epoch milliseconds: which codes have expired. */
  now: number;
  /** The coupon, with the count of its codes (its own codes are the list below). */
  coupon: Coupon;
  list: ListPage<PromotionalCode>;
}

/** A coupon's page: its terms and all of its codes, 50 at a time, newest first. */
export function couponCodesBody(v: CouponCodesView): SafeHtml {
  const { base, coupon, list } = v;
  return html`
      <p><a href="${base}/coupons">← Coupons</a></p>
      <div class="page-head"><h1>${coupon.name}</h1><a class="button" href="${base}/coupons/${coupon.id}/codes/new">Add a code</a></div>
      <p>${discountOf(coupon)} · ${statusBadge(coupon.valid, ['Valid', 'Not valid'])} · ${formatCount(coupon.promotionalCodesCount)} ${coupon.promotionalCodesCount === 1 ? 'code' : 'codes'}${coupon.redeemBy ? html` · until ${formatTime(coupon.redeemBy)}` : ''}</p>
      ${list.items.length === 0
        ? html`<p class="muted">No codes yet. Customers redeem a coupon through a code: <a href="${base}/coupons/${coupon.id}/codes/new">add one</a> for each affiliate.</p>`
        : codeRows(v, list.items, `Codes of ${coupon.name}`)}
      ${pager(list)}`;
}

function couponFields(values: FormValues, errors: FormErrors, currency: string): SafeHtml {
  return html`<div class="form-grid">
    ${textField({ label: 'Name', name: 'name', value: values.name, required: true, help: 'Such as "Spring 20 % off".' }, errors)}
    ${selectField({ label: 'Discount type', name: 'couponType', value: values.couponType ?? 'PERCENTAGE', options: [['PERCENTAGE', 'Percentage'], ['FLAT', 'Fixed amount']] }, errors)}
    ${textField({ label: 'Percent off', name: 'percentOff', type: 'number', value: values.percentOff, help: 'For a percentage: 1 to 100.', attrs: html`min="1" max="100" step="any"` }, errors)}
    ${textField({ label: 'Amount off', name: 'amountOff', type: 'number', value: values.amountOff, help: 'For a fixed amount, in the currency below.', attrs: html`min="0" step="any" inputmode="decimal"` }, errors)}
    ${textField({ label: 'Currency', name: 'currency', value: values.currency ?? currency, help: 'Of the fixed amount.' }, errors)}
    ${selectField({ label: 'Duration', name: 'duration', value: values.duration ?? 'once', options: [['once', 'Once'], ['forever', 'Forever'], ['repeating', 'Several months']], help: 'How long a subscription keeps the discount.' }, errors)}
    ${textField({ label: 'Months', name: 'durationInMonths', type: 'number', value: values.durationInMonths, help: 'For "several months": 1 to 120.', attrs: html`min="1" max="120" step="1"` }, errors)}
    ${textField({ label: 'Maximum redemptions', name: 'maxRedemptions', type: 'number', value: values.maxRedemptions, help: 'Across all of its codes. Empty: unlimited.', attrs: html`min="1" step="1"` }, errors)}
    ${textField({ label: 'Redeem by (UTC)', name: 'redeemBy', type: 'datetime-local', value: values.redeemBy, help: 'Empty: no end date.' }, errors)}
    ${textField({ label: 'External id', name: 'externalId', value: values.externalId, help: 'Optional: the coupon\'s id in your billing system.', autocomplete: 'off' }, errors)}
  </div>`;
}

export interface CouponFormView {
  base: string;
  session: DashboardSession;
  currency: string;
  values: FormValues;
  errors: FormErrors;
}

export function newCouponBody(v: CouponFormView): SafeHtml {
  return html`
      <div class="page-head"><h1>New coupon</h1></div>
      <form class="card" method="post" action="${v.base}/coupons" novalidate>
        ${csrfField(v.session)}
        ${couponFields(v.values, v.errors, v.currency)}
        <div class="actions"><button type="submit">Create coupon</button> <a href="${v.base}/coupons">Cancel</a></div>
      </form>`;
}

/** The code forms' affiliate field: an e-mail, with the newest affiliates as suggestions (any e-mail can still be typed). */
function affiliateField(value: string | undefined, errors: FormErrors): SafeHtml {
  return textField(
    { label: 'Affiliate e-mail', name: 'affiliateEmail', type: 'email', value, autocomplete: 'off', help: 'The affiliate credited when the code is used. Empty: nobody yet (the code cannot be redeemed until assigned).', attrs: html`list="affiliate-emails"` },
    errors,
  );
}

function affiliateSuggestions(affiliates: Affiliate[]): SafeHtml {
  return html`<datalist id="affiliate-emails">${affiliates.map((a) => html`<option value="${a.email}">${a.firstName} ${a.lastName}</option>`)}</datalist>`;
}

export interface CodeFormView {
  base: string;
  session: DashboardSession;
  values: FormValues;
  errors: FormErrors;
  /** The affiliate field's suggestions (the newest affiliates). */
  suggestions: Affiliate[];
}

export function newCodeBody(v: CodeFormView & { coupon: Coupon }): SafeHtml {
  const { base, coupon, values, errors } = v;
  return html`
      <div class="page-head"><h1>New code for ${coupon.name}</h1></div>
      <form class="card" method="post" action="${base}/coupons/${coupon.id}/codes" novalidate>
        ${csrfField(v.session)}
        <div class="form-grid">
          ${textField({ label: 'Code', name: 'code', value: values.code, autocomplete: 'off', help: 'What customers type, such as JANE20: letters, digits, - and _. Empty: generated.' }, errors)}
          ${affiliateField(values.affiliateEmail, errors)}
          ${textField({ label: 'Expires (UTC)', name: 'expiresAt', type: 'datetime-local', value: values.expiresAt, help: 'Empty: never.' }, errors)}
          ${textField({ label: 'Maximum redemptions', name: 'maxRedemptions', type: 'number', value: values.maxRedemptions, help: 'Empty: unlimited.', attrs: html`min="1" step="1"` }, errors)}
        </div>
        ${checkboxField({ label: 'First order only', name: 'firstTimeOrder', checked: values.firstTimeOrder === 'on', help: 'Only customers without an earlier sale can use it.' }, errors)}
        ${affiliateSuggestions(v.suggestions)}
        <div class="actions"><button type="submit">Create code</button> <a href="${base}/coupons">Cancel</a></div>
      </form>`;
}

export function editCodeBody(v: CodeFormView & { code: PromotionalCode }): SafeHtml {
  const { base, code, values, errors } = v;
  return html`
      <div class="page-head"><h1>Code <code>${code.code}</code></h1></div>
      <form class="card" method="post" action="${base}/coupons/codes/${code.id}" novalidate>
        ${csrfField(v.session)}
        <p class="muted">Coupon: ${code.coupon.name} · ${formatRedeemed(code.timesRedeemed)}.</p>
        ${checkboxField({ label: 'Active', name: 'active', checked: values.active === 'on', help: 'An inactive code cannot be redeemed.' }, errors)}
        <div class="form-grid">
          ${affiliateField(values.affiliateEmail, errors)}
          ${textField({ label: 'Expires (UTC)', name: 'expiresAt', type: 'datetime-local', value: values.expiresAt, help: 'Empty: never.' }, errors)}
          ${textField({ label: 'Maximum redemptions', name: 'maxRedemptions', type: 'number', value: values.maxRedemptions, help: 'Empty: unlimited.', attrs: html`min="1" step="1"` }, errors)}
        </div>
        ${affiliateSuggestions(v.suggestions)}
        <div class="actions"><button type="submit">Save code</button> <a href="${base}/coupons">Cancel</a></div>
      </form>`;
}
