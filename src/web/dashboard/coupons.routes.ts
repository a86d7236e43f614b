import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { AppServices } from '../../app-services.ts';
import type { Db } from '../../db/transaction.ts';
import { ApiError, invalidField } from '../../domain/errors.ts';
import { assertValidBody } from '../../http/validation.ts';
import { getAffiliate, getAffiliatePage } from '../../modules/affiliates/affiliate.service.ts';
import { CreateCouponBody } from '../../modules/coupons/coupon.schema.ts';
import { createCoupon, getCoupon, getCouponPage, type ListedCoupon } from '../../modules/coupons/coupon.service.ts';
import type { ProgramContext } from '../../domain/program-context.ts';
import { CreatePromotionalCodeBody, UpdatePromotionalCodeBody, type Coupon, type NestedPromotionalCode } from '../../modules/coupons/promotional-code.schema.ts';
import { createPromotionalCode, getPromotionalCode, updatePromotionalCode } from '../../modules/coupons/promotional-code.service.ts';
import { html, type SafeHtml } from '../html.ts';
import { csrfField, postButton } from '../layout.ts';
import { currentProgram, doneFlash, pager, redirectDone, listPage, requestedPage, sendPage } from './dashboard-page.ts';
import { formatAmount, formatRedeemed, formatTime, statusBadge } from './format.ts';
import {
  apiBody,
  checkboxField,
  formErrorsOf,
  noErrors,
  optionalNumber,
  optionalText,
  optionalUtcDateTime,
  readForm,
  selectField,
  textField,
  toDateTimeInput,
  type FormErrors,
  type FormValues,
} from './forms.ts';

// Coupons (the discount) and their promotional codes (what a customer types, usually one per
// affiliate). Every change goes through the API's services and schemas: createCoupon,
// createPromotionalCode, updatePromotionalCode (which records promotional_code.updated).

const DONE = {
  'coupon-created': 'Coupon created. Now add promotional codes to it and assign them to affiliates.',
  'code-created': 'Promotional code created.',
  'code-updated': 'Promotional code saved.',
  'code-deactivated': 'Promotional code deactivated: it can no longer be redeemed.',
};

/** Code forms name the affiliate by e-mail; the services' pointers name it by id. */
const CODE_FIELDS = { affiliateId: 'affiliateEmail', limitToAffiliate: 'affiliateEmail' };

const errorFlash = (errors: FormErrors) => (errors.message ? { kind: 'error' as const, text: errors.message } : undefined);

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

/** `affiliateEmail` typed in a form → the affiliate's id; blank → null (no affiliate). */
async function affiliateIdOfEmail(db: Db, program: ProgramContext, email: string | undefined): Promise<string | null> {
  const text = optionalText(email);
  if (text === undefined) return null;
  try {
    return (await getAffiliate(db, program, { email: text })).id;
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) throw invalidField('#/affiliateEmail', 'no affiliate of this program has this e-mail');
    if (error instanceof ApiError && error.status === 422) throw invalidField('#/affiliateEmail', 'must be an e-mail address');
    throw error;
  }
}

/** Suggestions for the affiliate field (the newest affiliates); any e-mail can still be typed. */
async function affiliateSuggestions(db: Db, program: ProgramContext): Promise<SafeHtml> {
  const { items } = await getAffiliatePage(db, program, { limit: 100 });
  return html`<datalist id="affiliate-emails">${items.map((a) => html`<option value="${a.email}">${a.firstName} ${a.lastName}</option>`)}</datalist>`;
}

function affiliateField(value: string | undefined, errors: FormErrors): SafeHtml {
  return textField(
    { label: 'Affiliate e-mail', name: 'affiliateEmail', type: 'email', value, autocomplete: 'off', help: 'The affiliate credited when the code is used. Empty: nobody yet (the code cannot be redeemed until assigned).', attrs: html`list="affiliate-emails"` },
    errors,
  );
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

function couponBodyOf(form: FormValues): CreateCouponBody {
  const type = form.couponType ?? '';
  const body = {
    name: form.name ?? '',
    couponType: type,
    // Only the amount field of the chosen type is sent: the other may hold a leftover value.
    percentOff: type === 'PERCENTAGE' ? optionalNumber(form.percentOff) : undefined,
    amountOff: type === 'FLAT' ? optionalNumber(form.amountOff) : undefined,
    currency: type === 'FLAT' ? optionalText(form.currency) : undefined,
    duration: optionalText(form.duration),
    durationInMonths: form.duration === 'repeating' ? optionalNumber(form.durationInMonths) : undefined,
    maxRedemptions: optionalNumber(form.maxRedemptions),
    redeemBy: optionalUtcDateTime(form.redeemBy),
    externalId: optionalText(form.externalId),
  };
  return apiBody(CreateCouponBody, body);
}

export const couponRoutes: FastifyPluginAsync<AppServices> = async (app, { db }) => {
  app.get('/coupons', async (request, reply) => {
    const { context, base } = currentProgram(request);
    const page = requestedPage(request);
    const list = listPage(await getCouponPage(db, context, {}, page), page, `${base}/coupons`);
    const coupons = list.items;
    const now = context.clock().getTime();

    const couponCard = (coupon: ListedCoupon) => html`<section class="card" aria-labelledby="coupon-${coupon.id}">
      <div class="page-head">
        <h2 id="coupon-${coupon.id}">${coupon.name}</h2>
        <a class="button small" href="${base}/coupons/${coupon.id}/codes/new">Add a code</a>
      </div>
      <p>${discountOf(coupon)} · ${statusBadge(coupon.valid, ['Valid', 'Not valid'])} · ${formatRedeemed(coupon.timesRedeemed, coupon.maxRedemptions)}${coupon.redeemBy ? html` · until ${formatTime(coupon.redeemBy)}` : ''}</p>
      ${coupon.promotionalCodes.length === 0
        ? html`<p class="muted">No codes yet. Customers redeem a coupon through a code: <a href="${base}/coupons/${coupon.id}/codes/new">add one</a> for each affiliate.</p>`
        : html`<div class="table-wrap" role="region" aria-label="Coupons and codes" tabindex="0"><table>
            <thead><tr><th scope="col">Code</th><th scope="col">Affiliate</th><th scope="col">Status</th><th scope="col">Expires</th><th scope="col" class="num">Redeemed</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
            <tbody>${coupon.promotionalCodes.map(
              (code) => html`<tr>
                <td><code>${code.code}</code></td>
                <td>${code.affiliate ? html`<a href="${base}/affiliates/${code.affiliate.id}">${code.affiliate.firstName} ${code.affiliate.lastName}</a>` : html`<span class="muted">Not assigned</span>`}</td>
                <td>${codeState(code, now)}</td>
                <td>${formatTime(code.expiresAt, 'Never')}</td>
                <td class="num">${code.timesRedeemed}${code.maxRedemptions === null ? '' : ` / ${code.maxRedemptions}`}</td>
                <td><div class="actions">
                  <a href="${base}/coupons/codes/${code.id}" aria-label="Edit ${code.code}">Edit</a>
                  ${code.active
                    ? postButton(request.session!, `${base}/coupons/codes/${code.id}/deactivate`, 'Deactivate', { className: 'link', ariaLabel: `Deactivate ${code.code}`, confirm: `Deactivate ${code.code}? It can no longer be redeemed.` })
                    : ''}
                </div></td>
              </tr>`,
            )}</tbody>
          </table></div>`}
      ${coupon.promotionalCodesCount > coupon.promotionalCodes.length
        ? html`<p class="muted">The ${coupon.promotionalCodes.length} newest of ${coupon.promotionalCodesCount} codes.</p>`
        : ''}
    </section>`;

    const body = html`
      <div class="page-head"><h1>Coupons &amp; promotional codes</h1><a class="button" href="${base}/coupons/new">New coupon</a></div>
      ${coupons.length === 0
        ? html`<div class="empty"><p><strong>No coupons yet.</strong></p>
            <p>A coupon is a discount (such as 20 % off); its promotional codes are what customers type at checkout.
            Give each affiliate their own code and every sale with it is credited to them.
            <a href="${base}/coupons/new">Create the first coupon</a>.</p></div>`
        : coupons.map(couponCard)}
      ${pager(list)}`;
    return sendPage(db, request, reply, { title: 'Coupons & codes', active: 'coupons', body, flash: doneFlash(request, DONE) });
  });

  function newCouponPage(request: FastifyRequest, reply: FastifyReply, values: FormValues = {}, errors: FormErrors = noErrors) {
    const { base, program } = currentProgram(request);
    const body = html`
      <div class="page-head"><h1>New coupon</h1></div>
      <form class="card" method="post" action="${base}/coupons" novalidate>
        ${csrfField(request.session!)}
        ${couponFields(values, errors, program.currency)}
        <div class="actions"><button type="submit">Create coupon</button> <a href="${base}/coupons">Cancel</a></div>
      </form>`;
    return sendPage(db, request, reply, { title: 'New coupon', active: 'coupons', body, status: errors.status, flash: errorFlash(errors) });
  }

  app.get('/coupons/new', (request, reply) => newCouponPage(request, reply));

  app.post('/coupons', async (request, reply) => {
    const { context, base } = currentProgram(request);
    const form = readForm(request);
    try {
      await createCoupon(db, context, couponBodyOf(form));
      return redirectDone(reply, `${base}/coupons`, 'coupon-created');
    } catch (error) {
      return newCouponPage(request, reply, form, formErrorsOf(error));
    }
  });

  async function newCodePage(request: FastifyRequest, reply: FastifyReply, values: FormValues = {}, errors: FormErrors = noErrors) {
    const { context, base } = currentProgram(request);
    const { couponId } = request.params as { couponId: string };
    const coupon = await getCoupon(db, context, { id: couponId });
    const body = html`
      <div class="page-head"><h1>New code for ${coupon.name}</h1></div>
      <form class="card" method="post" action="${base}/coupons/${coupon.id}/codes" novalidate>
        ${csrfField(request.session!)}
        <div class="form-grid">
          ${textField({ label: 'Code', name: 'code', value: values.code, autocomplete: 'off', help: 'What customers type, such as JANE20: letters, digits, - and _. Empty: generated.' }, errors)}
          ${affiliateField(values.affiliateEmail, errors)}
          ${textField({ label: 'Expires (UTC)', name: 'expiresAt', type: 'datetime-local', value: values.expiresAt, help: 'Empty: never.' }, errors)}
          ${textField({ label: 'Maximum redemptions', name: 'maxRedemptions', type: 'number', value: values.maxRedemptions, help: 'Empty: unlimited.', attrs: html`min="1" step="1"` }, errors)}
        </div>
        ${checkboxField({ label: 'First order only', name: 'firstTimeOrder', checked: values.firstTimeOrder === 'on', help: 'Only customers without an earlier sale can use it.' }, errors)}
        ${await affiliateSuggestions(db, context)}
        <div class="actions"><button type="submit">Create code</button> <a href="${base}/coupons">Cancel</a></div>
      </form>`;
    return sendPage(db, request, reply, { title: 'New promotional code', active: 'coupons', body, status: errors.status, flash: errorFlash(errors) });
  }

  app.get('/coupons/:couponId/codes/new', (request, reply) => newCodePage(request, reply));

  app.post('/coupons/:couponId/codes', async (request, reply) => {
    const { context, base } = currentProgram(request);
    const { couponId } = request.params as { couponId: string };
    const form = readForm(request);
    try {
      const affiliateId = await affiliateIdOfEmail(db, context, form.affiliateEmail);
      const body = apiBody(CreatePromotionalCodeBody, {
          couponId,
          code: optionalText(form.code),
          affiliateId: affiliateId ?? undefined,
          expiresAt: optionalUtcDateTime(form.expiresAt),
          maxRedemptions: optionalNumber(form.maxRedemptions),
          firstTimeOrder: form.firstTimeOrder === 'on',
      });
      await createPromotionalCode(db, context, body);
      return redirectDone(reply, `${base}/coupons`, 'code-created');
    } catch (error) {
      return newCodePage(request, reply, form, formErrorsOf(error, CODE_FIELDS));
    }
  });

  async function editCodePage(request: FastifyRequest, reply: FastifyReply, values?: FormValues, errors: FormErrors = noErrors) {
    const { context, base } = currentProgram(request);
    const { codeId } = request.params as { codeId: string };
    const code = await getPromotionalCode(db, context, { id: codeId });
    const shown = values ?? {
      active: code.active ? 'on' : '',
      affiliateEmail: code.affiliate?.email ?? '',
      expiresAt: toDateTimeInput(code.expiresAt),
      maxRedemptions: code.maxRedemptions === null ? '' : String(code.maxRedemptions),
    };
    const body = html`
      <div class="page-head"><h1>Code <code>${code.code}</code></h1></div>
      <form class="card" method="post" action="${base}/coupons/codes/${code.id}" novalidate>
        ${csrfField(request.session!)}
        <p class="muted">Coupon: ${code.coupon.name} · ${formatRedeemed(code.timesRedeemed)}.</p>
        ${checkboxField({ label: 'Active', name: 'active', checked: shown.active === 'on', help: 'An inactive code cannot be redeemed.' }, errors)}
        <div class="form-grid">
          ${affiliateField(shown.affiliateEmail, errors)}
          ${textField({ label: 'Expires (UTC)', name: 'expiresAt', type: 'datetime-local', value: shown.expiresAt, help: 'Empty: never.' }, errors)}
          ${textField({ label: 'Maximum redemptions', name: 'maxRedemptions', type: 'number', value: shown.maxRedemptions, help: 'Empty: unlimited.', attrs: html`min="1" step="1"` }, errors)}
        </div>
        ${await affiliateSuggestions(db, context)}
        <div class="actions"><button type="submit">Save code</button> <a href="${base}/coupons">Cancel</a></div>
      </form>`;
    return sendPage(db, request, reply, { title: `Code ${code.code}`, active: 'coupons', body, status: errors.status, flash: errorFlash(errors) });
  }

  app.get('/coupons/codes/:codeId', (request, reply) => editCodePage(request, reply));

  app.post('/coupons/codes/:codeId', async (request, reply) => {
    const { context, base } = currentProgram(request);
    const { codeId } = request.params as { codeId: string };
    const form = readForm(request);
    try {
      const body = {
        promotionalCodeId: codeId,
        active: form.active === 'on',
        affiliateId: await affiliateIdOfEmail(db, context, form.affiliateEmail),
        expiresAt: optionalUtcDateTime(form.expiresAt) ?? null,
        maxRedemptions: optionalNumber(form.maxRedemptions) ?? null,
      };
      assertValidBody(UpdatePromotionalCodeBody, body);
      await updatePromotionalCode(db, context, body);
      return redirectDone(reply, `${base}/coupons`, 'code-updated');
    } catch (error) {
      return editCodePage(request, reply, form, formErrorsOf(error, CODE_FIELDS));
    }
  });

  app.post('/coupons/codes/:codeId/deactivate', async (request, reply) => {
    const { context, base } = currentProgram(request);
    const { codeId } = request.params as { codeId: string };
    await updatePromotionalCode(db, context, { promotionalCodeId: codeId, active: false });
    return redirectDone(reply, `${base}/coupons`, 'code-deactivated');
  });
};
