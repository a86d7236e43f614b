import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { AppServices } from '../../app-services.ts';
import type { Db } from '../../db/transaction.ts';
import { getAffiliateNames } from '../../modules/affiliates/affiliate.service.ts';
import { CreateReferralBody } from '../../modules/referrals/referral.schema.ts';
import { countMatchingReferrals, createReferral, getReferralPage, type ReferralQuery } from '../../modules/referrals/referral.service.ts';
import { ApiError } from '../../domain/errors.ts';
import { currentProgram, doneFlash, listPage, redirectDone, requestedPage, sendPage } from './dashboard-page.ts';
import { apiBody, errorFlash, formErrorsOf, noErrors, optionalText, readForm, readQuery, searchTextError, withFieldError, type FormErrors, type FormValues } from './forms.ts';
import { affiliateChoices, readAffiliateField, type AffiliateFieldValue } from './affiliate-field.ts';
import { readAffiliateFilter, readDateRange } from './list-filters.ts';
import { newReferralBody, referralListBody } from './referrals.view.ts';

// Referred customers on the dashboard: the list with search, filters and its count, and
// recording one by hand through the service POST /api/v1/referrals uses (same rules, same errors).
// The pages are referrals.view.ts.

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

async function listPageOf(db: Db, request: FastifyRequest, reply: FastifyReply) {
  const { context, base } = currentProgram(request);
  const query = readQuery(request);
  const affiliate = await readAffiliateFilter(db, context, query.affiliate);
  const range = readDateRange(query.from, query.to);
  const q = (query.q ?? '').trim();
  const searchError = searchTextError(q);
  const fieldErrors: Record<string, string> = { ...range.errors, ...(affiliate.error ? { affiliate: affiliate.error } : {}), ...(searchError ? { q: searchError } : {}) };
  const status = query.status === 'active' || query.status === 'inactive' ? query.status : undefined;
  const filter: ReferralQuery = { affiliateId: affiliate.affiliateId, createdFrom: range.createdFrom, createdBefore: range.createdBefore, ...(q ? { search: q } : {}), ...(status ? { status } : {}) };
  const invalid = Object.keys(fieldErrors).length > 0;
  const page = requestedPage(request);
  const [found, count] = invalid ? [{ items: [] }, 0] : await Promise.all([getReferralPage(db, context, filter, page), countMatchingReferrals(db, context, filter)]);
  const values = { q: q || undefined, affiliate: query.affiliate, status, from: query.from, to: query.to };
  const list = listPage(found, page, `${base}/referrals`, values);
  const names = await getAffiliateNames(db, context, list.items.map((r) => r.affiliateId));
  const body = referralListBody({
    base,
    values,
    errors: { fields: fieldErrors, message: '', status: 200 },
    statuses: STATUSES,
    label: affiliate.label,
    filtered: Object.values(values).some((v) => v !== undefined && v !== ''),
    count,
    list,
    names,
  });
  return sendPage(db, request, reply, { title: 'Referrals', active: 'referrals', body, flash: doneFlash(request, DONE) });
}

async function newReferralPageOf(db: Db, request: FastifyRequest, reply: FastifyReply, values: FormValues = {}, errors: FormErrors = noErrors, affiliate?: AffiliateFieldValue) {
  const { base, context } = currentProgram(request);
  const suggestions = affiliate?.picker ? [] : (await affiliateChoices(db, context)).rows;
  const body = newReferralBody({ base, session: request.session!, values, errors, affiliate, suggestions });
  return sendPage(db, request, reply, { title: 'Record a referral', active: 'referrals', body, status: errors.status, flash: errorFlash(errors) });
}

export const referralRoutes: FastifyPluginAsync<AppServices> = async (app, { db, referralMade }) => {
  app.get('/referrals', (request, reply) => listPageOf(db, request, reply));

  app.get('/referrals/new', (request, reply) => newReferralPageOf(db, request, reply));

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
        await createReferral(db, context, body, { referralMade });
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
    return newReferralPageOf(db, request, reply, form, errors, affiliate);
  });
};
