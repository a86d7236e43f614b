import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { AppServices } from '../../app-services.ts';
import type { Db } from '../../db/transaction.ts';
import { ApiError, invalidField } from '../../domain/errors.ts';
import type { ProgramContext } from '../../domain/program-context.ts';
import { assertValidBody } from '../../http/validation.ts';
import { getAffiliate, getAffiliatePage } from '../../modules/affiliates/affiliate.service.ts';
import { CreateCouponBody } from '../../modules/coupons/coupon.schema.ts';
import { createCoupon, getCoupon, getCouponPage, type CouponCodeBounds } from '../../modules/coupons/coupon.service.ts';
import { CreatePromotionalCodeBody, UpdatePromotionalCodeBody } from '../../modules/coupons/promotional-code.schema.ts';
import { createPromotionalCode, getPromotionalCode, getPromotionalCodePage, updatePromotionalCode } from '../../modules/coupons/promotional-code.service.ts';
import { couponCodesBody, couponListBody, editCodeBody, newCodeBody, newCouponBody } from './coupons.view.ts';
import { currentProgram, doneFlash, listPage, PAGE_SIZE, redirectDone, requestedPage, sendPage } from './dashboard-page.ts';
import { apiBody, formErrorsOf, noErrors, optionalNumber, optionalText, optionalUtcDateTime, readForm, toDateTimeInput, type FormErrors, type FormValues } from './forms.ts';

// Coupons (the discount) and their promotional codes (what a customer types, usually one per
// affiliate). Every change goes through the API's services and schemas: createCoupon,
// createPromotionalCode, updatePromotionalCode (which records promotional_code.updated). The
// pages are coupons.view.ts. The list shows each coupon's newest codes; a coupon's own page
// pages through all of them.

/** The list's coupons carry their 10 newest codes: at most 500 rows on a page of 50 coupons. */
const LIST_CODES: CouponCodeBounds = { perCoupon: 10, perPage: 10 * PAGE_SIZE };

/** Pages about one coupon read its terms and the count of its codes, none of the codes. */
const NO_CODES: CouponCodeBounds = { perCoupon: 0, perPage: 0 };

const DONE = {
  'coupon-created': 'Coupon created. Now add promotional codes to it and assign them to affiliates.',
  'code-created': 'Promotional code created.',
  'code-updated': 'Promotional code saved.',
  'code-deactivated': 'Promotional code deactivated: it can no longer be redeemed.',
};

/** Code forms name the affiliate by e-mail; the services' pointers name it by id. */
const CODE_FIELDS = { affiliateId: 'affiliateEmail', limitToAffiliate: 'affiliateEmail' };

const errorFlash = (errors: FormErrors) => (errors.message ? { kind: 'error' as const, text: errors.message } : undefined);

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

/** The affiliate field's suggestions: the newest affiliates. */
async function affiliateSuggestions(db: Db, program: ProgramContext) {
  return (await getAffiliatePage(db, program, { limit: 100 })).items;
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

async function listPageOf(db: Db, siteUrl: string, request: FastifyRequest, reply: FastifyReply) {
  const { context, base } = currentProgram(request);
  const page = requestedPage(request);
  const list = listPage(await getCouponPage(db, context, {}, page, siteUrl, LIST_CODES), page, `${base}/coupons`);
  const body = couponListBody({ base, session: request.session!, now: context.clock().getTime(), list });
  return sendPage(db, request, reply, { title: 'Coupons & codes', active: 'coupons', body, flash: doneFlash(request, DONE) });
}

async function couponPageOf(db: Db, siteUrl: string, request: FastifyRequest, reply: FastifyReply) {
  const { context, base } = currentProgram(request);
  const { couponId } = request.params as { couponId: string };
  const coupon = await getCoupon(db, context, { id: couponId }, siteUrl, NO_CODES);
  const page = requestedPage(request);
  const list = listPage(await getPromotionalCodePage(db, context, { couponId }, page), page, `${base}/coupons/${couponId}`);
  const body = couponCodesBody({ base, session: request.session!, now: context.clock().getTime(), coupon, list });
  return sendPage(db, request, reply, { title: coupon.name, active: 'coupons', body });
}

function newCouponPageOf(db: Db, request: FastifyRequest, reply: FastifyReply, values: FormValues = {}, errors: FormErrors = noErrors) {
  const { base, program } = currentProgram(request);
  const body = newCouponBody({ base, session: request.session!, currency: program.currency, values, errors });
  return sendPage(db, request, reply, { title: 'New coupon', active: 'coupons', body, status: errors.status, flash: errorFlash(errors) });
}

async function newCodePageOf(db: Db, siteUrl: string, request: FastifyRequest, reply: FastifyReply, values: FormValues = {}, errors: FormErrors = noErrors) {
  const { context, base } = currentProgram(request);
  const { couponId } = request.params as { couponId: string };
  const coupon = await getCoupon(db, context, { id: couponId }, siteUrl, NO_CODES);
  const body = newCodeBody({ base, session: request.session!, coupon, values, errors, suggestions: await affiliateSuggestions(db, context) });
  return sendPage(db, request, reply, { title: 'New promotional code', active: 'coupons', body, status: errors.status, flash: errorFlash(errors) });
}

async function editCodePageOf(db: Db, request: FastifyRequest, reply: FastifyReply, values?: FormValues, errors: FormErrors = noErrors) {
  const { context, base } = currentProgram(request);
  const { codeId } = request.params as { codeId: string };
  const code = await getPromotionalCode(db, context, { id: codeId });
  const shown = values ?? {
    active: code.active ? 'on' : '',
    affiliateEmail: code.affiliate?.email ?? '',
    expiresAt: toDateTimeInput(code.expiresAt),
    maxRedemptions: code.maxRedemptions === null ? '' : String(code.maxRedemptions),
  };
  const body = editCodeBody({ base, session: request.session!, code, values: shown, errors, suggestions: await affiliateSuggestions(db, context) });
  return sendPage(db, request, reply, { title: `Code ${code.code}`, active: 'coupons', body, status: errors.status, flash: errorFlash(errors) });
}

export const couponRoutes: FastifyPluginAsync<AppServices> = async (app, { db, config }) => {
  const { siteUrl } = config;
  app.get('/coupons', (request, reply) => listPageOf(db, siteUrl, request, reply));

  app.get('/coupons/new', (request, reply) => newCouponPageOf(db, request, reply));

  app.post('/coupons', async (request, reply) => {
    const { context, base } = currentProgram(request);
    const form = readForm(request);
    try {
      await createCoupon(db, context, couponBodyOf(form), siteUrl);
      return redirectDone(reply, `${base}/coupons`, 'coupon-created');
    } catch (error) {
      return newCouponPageOf(db, request, reply, form, formErrorsOf(error));
    }
  });

  app.get('/coupons/:couponId', (request, reply) => couponPageOf(db, siteUrl, request, reply));

  app.get('/coupons/:couponId/codes/new', (request, reply) => newCodePageOf(db, siteUrl, request, reply));

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
      return newCodePageOf(db, siteUrl, request, reply, form, formErrorsOf(error, CODE_FIELDS));
    }
  });

  app.get('/coupons/codes/:codeId', (request, reply) => editCodePageOf(db, request, reply));

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
      return editCodePageOf(db, request, reply, form, formErrorsOf(error, CODE_FIELDS));
    }
  });

  app.post('/coupons/codes/:codeId/deactivate', async (request, reply) => {
    const { context, base } = currentProgram(request);
    const { codeId } = request.params as { codeId: string };
    await updatePromotionalCode(db, context, { promotionalCodeId: codeId, active: false });
    return redirectDone(reply, `${base}/coupons`, 'code-deactivated');
  });
};
