import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { AppServices } from '../../app-services.ts';
import type { Db } from '../../db/transaction.ts';
import { ApiError, notFound } from '../../domain/errors.ts';
import { isUuid } from '../../domain/ids.ts';
import type { ProgramContext } from '../../domain/program-context.ts';
import type { PageOrder } from '../../db/keyset.ts';
import { assertValidBody } from '../../http/validation.ts';
import { getAffiliateNames } from '../../modules/affiliates/affiliate.service.ts';
import { getEntryPage } from '../../modules/ledger/commission.service.ts';
import { CreateSaleBody, RefundSaleBody } from '../../modules/sales/sale.schema.ts';
import { getReferral } from '../../modules/referrals/referral.service.ts';
import { exportSalesCsv, SALES_CSV_ROWS } from '../../modules/sales/sale-export.ts';
import { createSale, getSaleHistory, getSalePage, getSaleTotals, refundSale, voidSale, type SaleQuery } from '../../modules/sales/sale.service.ts';
import { currentProgram, doneFlash, listPage, redirectDone, requestedPage, sendPage } from './dashboard-page.ts';
import { apiBody, errorFlash, formErrorsOf, noErrors, optionalNumber, optionalText, readForm, readQuery, searchTextError, withFieldError, type FormErrors, type FormValues } from './forms.ts';
import { affiliateChoices, readAffiliateField, type AffiliateFieldValue } from './affiliate-field.ts';
import { readAffiliateFilter, readDateRange } from './list-filters.ts';
import { newSaleBody, saleBody, saleListBody, saleTitle } from './sales.view.ts';

// Sales on the dashboard (issue 21 item 1): the list with search, filters, sorting, totals and
// a CSV of what it shows; a sale's own page (its refunds, ledger entries and events) with refund
// and void; recording a sale by hand. Every change goes through the service the API uses, with
// the body checked against the API's schema, so the rules and the errors are the API's. The
// pages are sales.view.ts.

const SORTS: Record<string, [label: string, order: PageOrder]> = {
  newest: ['Newest first', { column: 'created_at', direction: 'desc' }],
  oldest: ['Oldest first', { column: 'created_at', direction: 'asc' }],
  'amount-desc': ['Amount, highest first', { column: 'total_earned', direction: 'desc' }],
  'amount-asc': ['Amount, lowest first', { column: 'total_earned', direction: 'asc' }],
  'commission-desc': ['Commission, highest first', { column: 'commission', direction: 'desc' }],
};

const REFUND_STATES: [string, string][] = [
  ['', 'Any'],
  ['none', 'Not refunded'],
  ['partial', 'Partly refunded'],
  ['full', 'Fully refunded'],
];

const DONE = { recorded: 'Sale recorded.', refunded: 'Refund recorded; the commission was taken back in proportion.', voided: 'Sale voided: it left the lists, the counters and the commission owed.' };

interface SaleListQuery {
  filter: SaleQuery;
  sort: string;
  order: PageOrder;
  /** The query string's values, to keep in the form, the pager and the CSV link. */
  values: Record<string, string | undefined>;
  errors: Record<string, string>;
  label?: string;
}

async function readSaleListQuery(db: Db, request: FastifyRequest): Promise<SaleListQuery> {
  const { context } = currentProgram(request);
  const query = readQuery(request);
  const affiliate = await readAffiliateFilter(db, context, query.affiliate);
  const range = readDateRange(query.from, query.to);
  const errors: Record<string, string> = { ...range.errors };
  if (affiliate.error) errors.affiliate = affiliate.error;
  const q = (query.q ?? '').trim();
  const searchError = searchTextError(q);
  if (searchError) errors.q = searchError;
  const refunded = REFUND_STATES.some(([value]) => value === query.refunded) ? query.refunded : '';
  const sort = query.sort !== undefined && query.sort in SORTS ? query.sort : 'newest';
  return {
    filter: {
      affiliateId: affiliate.affiliateId,
      createdFrom: range.createdFrom,
      createdBefore: range.createdBefore,
      ...(q ? { search: q } : {}),
      ...(refunded ? { refunded: refunded as SaleQuery['refunded'] } : {}),
    },
    sort,
    order: SORTS[sort]![1],
    values: { q: q || undefined, affiliate: query.affiliate, refunded: refunded || undefined, from: query.from, to: query.to, sort: sort === 'newest' ? undefined : sort },
    errors,
    label: affiliate.label,
  };
}

const queryString = (values: Record<string, string | undefined>) => new URLSearchParams(Object.entries(values).filter((e): e is [string, string] => e[1] !== undefined && e[1] !== '')).toString();

/** A sale id from the path (`:sale`: ids named …Id must be UUIDs): a positive whole number, else 404 (never a 500). */
function saleIdOf(request: FastifyRequest): number {
  const { sale: saleId } = request.params as { sale: string };
  if (!/^[1-9]\d{0,15}$/.test(saleId) || !Number.isSafeInteger(Number(saleId))) throw notFound('Sale');
  return Number(saleId);
}

/** What the customer field of the sale form names: an e-mail (POST /sales's email) or a referral of the program (its referralId). */
interface CustomerField {
  email?: string;
  referralId?: string;
  error?: string;
}

async function readCustomerField(db: Db, program: ProgramContext, value: string | undefined): Promise<CustomerField> {
  const text = value?.trim() ?? '';
  if (text === '') return {};
  if (text.includes('@')) return { email: text };
  if (!isUuid(text)) return { error: 'Give the customer’s e-mail, or their referral’s id.' };
  try {
    return { referralId: (await getReferral(db, program, { id: text.toLowerCase() })).id };
  } catch (error) {
    if (error instanceof ApiError && error.code === 'not_found') return { error: 'No customer of this program has this referral id.' };
    throw error;
  }
}

const NEW_CUSTOMER = 'No customer of this program has this e-mail yet. To record a new customer’s first sale, name their affiliate and the customer’s name below.';

/** The form field a service error that names no field is about (an unknown customer, a taken invoice, an inactive affiliate, a code that does not apply). */
function saleErrorField(error: ApiError, form: FormValues, byAffiliate: boolean): string | undefined {
  if (error.code === 'duplicate_sale') return 'externalInvoiceId';
  if (error.code === 'affiliate_inactive') return byAffiliate ? 'affiliate' : optionalText(form.promoCode) && !optionalText(form.customer) ? 'promoCode' : 'customer';
  if (error.code === 'not_found') return optionalText(form.promoCode) && error.detail.startsWith('Promotional code') ? 'promoCode' : 'customer';
  if (error.code.startsWith('promo_code_') || error.code === 'coupon_invalid') return 'promoCode';
  if (error.code === 'conflict') return 'customer';
  return undefined;
}

async function listPageOf(db: Db, request: FastifyRequest, reply: FastifyReply) {
  const { context, base, program } = currentProgram(request);
  const list = await readSaleListQuery(db, request);
  const invalid = Object.keys(list.errors).length > 0;
  const page = requestedPage(request, list.order);
  const [found, totals] = invalid ? [{ items: [] }, null] : await Promise.all([getSalePage(db, context, list.filter, page), getSaleTotals(db, context, list.filter)]);
  const shown = listPage(found, page, `${base}/sales`, list.values);
  const names = await getAffiliateNames(db, context, shown.items.map((s) => s.affiliateId));
  const body = saleListBody({
    base,
    currency: program.currency,
    values: list.values,
    errors: { fields: list.errors, message: '', status: 200 },
    sort: list.sort,
    order: list.order,
    sorts: Object.entries(SORTS).map(([value, [label]]) => [value, label]),
    refundStates: REFUND_STATES,
    label: list.label,
    filtered: Object.entries(list.values).some(([key, v]) => key !== 'sort' && v !== undefined && v !== ''),
    totals,
    csvQuery: queryString(list.values),
    csvRows: SALES_CSV_ROWS,
    list: shown,
    names,
  });
  return sendPage(db, request, reply, { title: 'Sales', active: 'sales', body, flash: doneFlash(request, DONE) });
}

async function newSalePageOf(db: Db, request: FastifyRequest, reply: FastifyReply, values: FormValues = {}, errors: FormErrors = noErrors, affiliate?: AffiliateFieldValue) {
  const { base, program, context } = currentProgram(request);
  const suggestions = affiliate?.picker ? [] : (await affiliateChoices(db, context)).rows;
  const body = newSaleBody({ base, session: request.session!, currency: program.currency, values, errors, affiliate, suggestions });
  return sendPage(db, request, reply, { title: 'Record a sale', active: 'sales', body, status: errors.status, flash: errorFlash(errors) });
}

/** The sale form's errors: the service's, each beside the field a person filled in, and the form's own. */
function saleFormErrors(error: unknown, form: FormValues, customer: CustomerField, affiliate: AffiliateFieldValue, both: string | undefined): FormErrors {
  let errors = noErrors;
  if (error !== undefined) {
    const byAffiliate = customer.referralId === undefined && affiliate.named !== undefined;
    errors = formErrorsOf(error, { email: 'customer', referralId: byAffiliate ? 'affiliate' : 'customer' });
    const field = error instanceof ApiError ? saleErrorField(error, form, byAffiliate) : undefined;
    if (field) errors = withFieldError(errors, field, field === 'customer' && error instanceof ApiError && error.code === 'not_found' ? NEW_CUSTOMER : errors.message);
  }
  // Nobody named: the service's "referralId, email or promoCode is required", said for this form.
  if (errors.fields.customer && !optionalText(form.customer)) errors.fields.customer = 'Is required: the customer’s e-mail or referral id.';
  if (customer.error) errors = withFieldError(errors, 'customer', customer.error);
  if (affiliate.error) errors = withFieldError(errors, 'affiliate', affiliate.error);
  if (both) errors = withFieldError(errors, 'affiliate', both);
  return errors;
}

async function salePageOf(db: Db, request: FastifyRequest, reply: FastifyReply, refundValue = '', refundErrors: FormErrors = noErrors) {
  const { context, base, program } = currentProgram(request);
  const id = saleIdOf(request);
  const history = await getSaleHistory(db, context, id);
  // Up to 101 entries, as the page has always shown (a sale has a handful).
  const [entries, names] = await Promise.all([getEntryPage(db, context, { saleId: id }, { limit: 101 }, context.clock()), getAffiliateNames(db, context, [history.sale.affiliateId])]);
  const body = saleBody({ ...history, base, session: request.session!, currency: program.currency, affiliate: names.get(history.sale.affiliateId), entries: entries.items, refundValue, refundErrors });
  return sendPage(db, request, reply, { title: saleTitle(history.sale), active: 'sales', body, status: refundErrors.status, flash: refundErrors.message ? errorFlash(refundErrors) : doneFlash(request, DONE) });
}

export const saleRoutes: FastifyPluginAsync<AppServices> = async (app, { db }) => {
  app.get('/sales', (request, reply) => listPageOf(db, request, reply));

  // What the list shows (every page, up to SALES_CSV_ROWS), as CSV, in the list's order.
  app.get('/sales.csv', async (request, reply) => {
    const { context } = currentProgram(request);
    const list = await readSaleListQuery(db, request);
    const csv = await exportSalesCsv(db, context, Object.keys(list.errors).length > 0 ? null : list.filter, list.order);
    const day = context.clock().toISOString().slice(0, 10);
    return reply
      .type('text/csv; charset=utf-8')
      .header('content-disposition', `attachment; filename="sales-${day}.csv"`)
      .send(csv);
  });

  app.get('/sales/new', (request, reply) => newSalePageOf(db, request, reply));

  // The customer (an e-mail or a referral id) and the affiliate (affiliate-field.ts) are named as a
  // person knows them, then handed to the service as POST /sales's email and referralId; the
  // rest is the API's body, checked by its schema.
  app.post('/sales/new', async (request, reply) => {
    const { context, base } = currentProgram(request);
    const form = readForm(request);
    const customer = await readCustomerField(db, context, form.customer);
    const affiliate = await readAffiliateField(db, context, form, 'affiliate');
    // A referral names its affiliate: a second one would credit the sale elsewhere.
    const both = customer.referralId !== undefined && affiliate.text !== '' ? 'The referral names its affiliate: leave this empty, or give the customer’s e-mail instead.' : undefined;
    let failure: unknown;
    try {
      const body = apiBody(CreateSaleBody, {
        totalEarned: optionalNumber(form.totalEarned) ?? '',
        email: customer.email,
        referralId: customer.referralId ?? affiliate.named?.apiValue,
        name: optionalText(form.name),
        externalInvoiceId: optionalText(form.externalInvoiceId),
        promoCode: optionalText(form.promoCode),
        commissionRate: optionalNumber(form.commissionRate),
      });
      if (!customer.error && !affiliate.error && !both) {
        const sale = await createSale(db, context, body);
        return redirectDone(reply, `${base}/sales/${sale.id}`, 'recorded');
      }
    } catch (error) {
      failure = error;
    }
    return newSalePageOf(db, request, reply, form, saleFormErrors(failure, form, customer, affiliate, both), affiliate);
  });

  app.get('/sales/:sale', (request, reply) => salePageOf(db, request, reply));

  app.post('/sales/:sale/refund', async (request, reply) => {
    const { context, base } = currentProgram(request);
    const saleId = saleIdOf(request);
    const form = readForm(request);
    try {
      const amount = optionalNumber(form.amount);
      const body = amount === undefined ? { saleId } : { saleId, amount };
      assertValidBody(RefundSaleBody, body);
      await refundSale(db, context, body);
      return redirectDone(reply, `${base}/sales/${saleId}`, 'refunded');
    } catch (error) {
      return salePageOf(db, request, reply, form.amount ?? '', formErrorsOf(error, { saleId: 'amount' }));
    }
  });

  app.post('/sales/:sale/void', async (request, reply) => {
    const { context, base } = currentProgram(request);
    await voidSale(db, context, saleIdOf(request));
    return redirectDone(reply, `${base}/sales`, 'voided');
  });
};
