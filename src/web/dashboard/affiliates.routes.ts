import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { AppServices } from '../../app-services.ts';
import type { Db } from '../../db/transaction.ts';
import type { PageOrder } from '../../db/keyset.ts';
import { millionthsToRate } from '../../domain/commission.ts';
import { assertValidBody } from '../../http/validation.ts';
import { AFFILIATES_CSV_ROWS, exportAffiliatesCsv } from '../../modules/affiliates/affiliate-export.ts';
import { CreateAffiliateBody, UpdateAffiliateBody } from '../../modules/affiliates/affiliate.schema.ts';
import { countAffiliatesMatching, createAffiliate, getAffiliatePage, getAffiliateProfile, getApprovalQueue, updateAffiliate, type AffiliateListFilter } from '../../modules/affiliates/affiliate.service.ts';
import { CreateLinkBody } from '../../modules/affiliates/link.schema.ts';
import { createLink, getAffiliateLinks } from '../../modules/affiliates/link.service.ts';
import { getPromotionalCodePage } from '../../modules/coupons/promotional-code.service.ts';
import { getLedgerBalance } from '../../modules/ledger/commission.service.ts';
import { getPayoutPage } from '../../modules/payouts/payout.service.ts';
import { getReferralPage } from '../../modules/referrals/referral.service.ts';
import { getSalePage } from '../../modules/sales/sale.service.ts';
import { affiliateChoices, choiceLabel } from './affiliate-field.ts';
import { affiliateDetailBody, affiliateListBody, editAffiliateBody, newAffiliateBody } from './affiliates.view.ts';
import { currentProgram, doneFlash, listPage, redirectDone, requestedPage, sendPage } from './dashboard-page.ts';
import { apiBody, errorFlash, formErrorsOf, noErrors, optionalNumber, optionalText, readForm, readQuery, searchTextError, type FormErrors, type FormValues } from './forms.ts';

// Affiliates: search and list, create, the detail page (links, referrals, sales, codes), edit,
// deactivate. Creating goes through createAffiliate, as POST /api/v1/affiliates does, so the
// affiliate gets its link and the affiliate.created event. The pages are affiliates.view.ts.

const RECENT = 20;

const DONE = {
  created: 'Affiliate created. Share their link, or give them a promotional code.',
  updated: 'Changes saved.',
  deactivated: 'Affiliate deactivated.',
  activated: 'Affiliate reactivated.',
  'link-created': 'Link added.',
  approved: 'Sign-up approved: the affiliate is active and has been e-mailed their link.',
  rejected: 'Sign-up rejected: the affiliate stays inactive.',
};

/** How many waiting sign-ups the queue shows at once (oldest first). */
const QUEUE_SHOWN = 50;

const SORTS: Record<string, [label: string, order: PageOrder]> = {
  newest: ['Newest first', { column: 'created_at', direction: 'desc' }],
  oldest: ['Oldest first', { column: 'created_at', direction: 'asc' }],
  'commission-desc': ['Commission earned, highest first', { column: 'total_commission_earned', direction: 'desc' }],
};

/** The list's filters from the query string: search text, status, order. */
function readAffiliateList(request: FastifyRequest) {
  const query = readQuery(request);
  const q = (query.q ?? '').trim();
  const status = query.status === 'active' || query.status === 'inactive' ? query.status : undefined;
  const sort = query.sort !== undefined && query.sort in SORTS ? query.sort : 'newest';
  const filter: AffiliateListFilter = { ...(q ? { search: q } : {}), ...(status ? { status } : {}) };
  return { q, searchError: searchTextError(q), status, sort, order: SORTS[sort]![1], filter, values: { q: q || undefined, status, sort: sort === 'newest' ? undefined : sort } };
}

/** The form's text as the API's create body; the schema then checks it as the API would. */
function createBodyOf(form: FormValues): CreateAffiliateBody {
  const body = {
    firstName: form.firstName ?? '',
    lastName: form.lastName ?? '',
    email: form.email ?? '',
    commissionRate: optionalNumber(form.commissionRate),
    affiliateLink: optionalText(form.affiliateLink),
    payoutEmail: optionalText(form.payoutEmail),
    paymentMethod: optionalText(form.paymentMethod),
  };
  return apiBody(CreateAffiliateBody, body);
}

/** The edit form as UpdateAffiliateBody, checked against its schema (as the API's route does). */
function updateBodyOf(form: FormValues): UpdateAffiliateBody {
  // Unparseable text is passed on as is, so the schema check names the field.
  const rate = (optionalNumber(form.commissionRate) ?? null) as number | null;
  const body = {
    firstName: form.firstName ?? '',
    lastName: form.lastName ?? '',
    commissionRate: rate,
    payoutEmail: form.payoutEmail ?? '',
    paymentMethod: form.paymentMethod ?? '',
    status: form.status ?? '',
  };
  assertValidBody(UpdateAffiliateBody, body);
  return body;
}

const defaultRateOf = (request: FastifyRequest) => millionthsToRate(currentProgram(request).context.defaultCommissionRate);
const affiliateIdOf = (request: FastifyRequest) => (request.params as { affiliateId: string }).affiliateId;

async function listPageOf(db: Db, request: FastifyRequest, reply: FastifyReply) {
  const { context, base, program } = currentProgram(request);
  const { q, searchError, status, sort, order, filter, values } = readAffiliateList(request);
  const page = requestedPage(request, order);
  const [found, count] = searchError ? [{ items: [] }, 0] : await Promise.all([getAffiliatePage(db, context, page, filter), countAffiliatesMatching(db, context, filter)]);
  const queue = await getApprovalQueue(db, context, QUEUE_SHOWN);
  const body = affiliateListBody({
    base,
    session: request.session!,
    programName: program.name,
    currency: program.currency,
    queue: { ...queue, shown: QUEUE_SHOWN },
    filters: { q, searchError, status, sort, sorts: Object.entries(SORTS).map(([value, [label]]) => [value, label]) },
    csvQuery: new URLSearchParams(Object.entries(values).filter((e): e is [string, string] => e[1] !== undefined)).toString(),
    csvRows: AFFILIATES_CSV_ROWS,
    count,
    list: listPage(found, page, `${base}/affiliates`, values),
  });
  return sendPage(db, request, reply, { title: 'Affiliates', active: 'affiliates', body, flash: doneFlash(request, DONE) });
}

function newPageOf(db: Db, request: FastifyRequest, reply: FastifyReply, values: FormValues = {}, errors: FormErrors = noErrors) {
  const body = newAffiliateBody({ base: currentProgram(request).base, session: request.session!, defaultRate: defaultRateOf(request), values, errors });
  return sendPage(db, request, reply, { title: 'New affiliate', active: 'affiliates', body, status: errors.status, flash: errorFlash(errors) });
}

async function detailPageOf(db: Db, request: FastifyRequest, reply: FastifyReply, linkValue = '', linkErrors: FormErrors = noErrors) {
  const { context, base, program } = currentProgram(request);
  const affiliateId = affiliateIdOf(request);
  const affiliate = await getAffiliateProfile(db, context, affiliateId);
  const recent = { limit: RECENT };
  const [links, referrals, sales, codes, balance, payouts] = await Promise.all([
    getAffiliateLinks(db, context, affiliate),
    getReferralPage(db, context, { affiliateId }, recent),
    getSalePage(db, context, { affiliateId }, recent),
    getPromotionalCodePage(db, context, { affiliateId }, recent),
    getLedgerBalance(db, context, affiliateId),
    getPayoutPage(db, context, { affiliateId }, recent),
  ]);
  const body = affiliateDetailBody({ base, session: request.session!, currency: program.currency, affiliate, balance, links, referrals, sales, payouts, codes, linkValue, linkErrors });
  const flash = linkErrors.message ? { kind: 'error' as const, text: linkErrors.message } : doneFlash(request, DONE);
  return sendPage(db, request, reply, { title: `${affiliate.firstName} ${affiliate.lastName}`, active: 'affiliates', body, status: linkErrors.status, flash });
}

async function editPageOf(db: Db, request: FastifyRequest, reply: FastifyReply, values?: FormValues, errors: FormErrors = noErrors) {
  const { context, base } = currentProgram(request);
  const affiliate = await getAffiliateProfile(db, context, affiliateIdOf(request));
  const shown = values ?? {
    firstName: affiliate.firstName,
    lastName: affiliate.lastName,
    commissionRate: affiliate.ownCommissionRate === null ? '' : String(affiliate.ownCommissionRate),
    payoutEmail: affiliate.payoutEmail,
    paymentMethod: affiliate.paymentMethod,
    status: affiliate.status,
  };
  const body = editAffiliateBody({ base, session: request.session!, defaultRate: defaultRateOf(request), affiliate, values: shown, errors });
  return sendPage(db, request, reply, { title: `Edit ${affiliate.firstName} ${affiliate.lastName}`, active: 'affiliates', body, status: errors.status, flash: errorFlash(errors) });
}

export const affiliateRoutes: FastifyPluginAsync<AppServices> = async (app, { db }) => {
  app.get('/affiliates', (request, reply) => listPageOf(db, request, reply));

  // The list as CSV (what the filters show, in their order; formula-safe cells), streamed in
  // keyset batches (affiliate-export.ts).
  app.get('/affiliates.csv', async (request, reply) => {
    const { context } = currentProgram(request);
    const { order, filter, searchError } = readAffiliateList(request);
    const file = await exportAffiliatesCsv(db, context, searchError ? null : filter, order);
    return reply.type('text/csv; charset=utf-8').header('content-disposition', `attachment; filename="affiliates-${context.clock().toISOString().slice(0, 10)}.csv"`).send(file);
  });

  // The suggestions of an affiliate field as a name is typed (dashboard.js, affiliate-field.ts):
  // up to 50 active affiliates whose name or e-mail contains q, newest first.
  app.get('/affiliates/choices', async (request, reply) => {
    const { rows } = await affiliateChoices(db, currentProgram(request).context, readQuery(request).q);
    return reply.header('cache-control', 'no-store').send(rows.map((a) => ({ value: a.email, label: choiceLabel(a) })));
  });

  app.get('/affiliates/new', (request, reply) => newPageOf(db, request, reply));

  app.post('/affiliates', async (request, reply) => {
    const { context, base } = currentProgram(request);
    const form = readForm(request);
    try {
      const affiliate = await createAffiliate(db, context, createBodyOf(form));
      return redirectDone(reply, `${base}/affiliates/${affiliate.id}`, 'created');
    } catch (error) {
      return newPageOf(db, request, reply, form, formErrorsOf(error));
    }
  });

  app.get('/affiliates/:affiliateId', (request, reply) => detailPageOf(db, request, reply));

  app.get('/affiliates/:affiliateId/edit', (request, reply) => editPageOf(db, request, reply));

  app.post('/affiliates/:affiliateId', async (request, reply) => {
    const { context, base } = currentProgram(request);
    const form = readForm(request);
    try {
      await updateAffiliate(db, context, affiliateIdOf(request), updateBodyOf(form));
      return redirectDone(reply, `${base}/affiliates/${affiliateIdOf(request)}`, 'updated');
    } catch (error) {
      return editPageOf(db, request, reply, form, formErrorsOf(error));
    }
  });

  app.post('/affiliates/:affiliateId/approval', async (request, reply) => {
    const { context, base } = currentProgram(request);
    const approval = readForm(request).approval === 'approved' ? 'approved' : 'rejected';
    await updateAffiliate(db, context, affiliateIdOf(request), { approval });
    return redirectDone(reply, `${base}/affiliates`, approval);
  });

  app.post('/affiliates/:affiliateId/status', async (request, reply) => {
    const { context, base } = currentProgram(request);
    const status = readForm(request).status === 'active' ? 'active' : 'inactive';
    await updateAffiliate(db, context, affiliateIdOf(request), { status });
    return redirectDone(reply, `${base}/affiliates/${affiliateIdOf(request)}`, status === 'active' ? 'activated' : 'deactivated');
  });

  app.post('/affiliates/:affiliateId/links', async (request, reply) => {
    const { context, base } = currentProgram(request);
    const affiliateId = affiliateIdOf(request);
    const form = readForm(request);
    try {
      const body = { affiliateId, ...(optionalText(form.link) === undefined ? {} : { link: optionalText(form.link) }) };
      assertValidBody(CreateLinkBody, body);
      await createLink(db, context, body);
      return redirectDone(reply, `${base}/affiliates/${affiliateId}`, 'link-created');
    } catch (error) {
      return detailPageOf(db, request, reply, form.link, formErrorsOf(error));
    }
  });
};
