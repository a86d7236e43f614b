import { commissionTakenBack, commissionUnder, earnsUnderPlan, millionthsToRate, rateToMillionths, type SaleRule } from '../../domain/commission.ts';
import { fromMinorUnits, toMinorUnits } from '../../domain/money.ts';
import { toIso } from '../../domain/clock.ts';
import { isUuid, newId } from '../../domain/ids.ts';
import { inTransaction, inTransactionOnce, type Db, type Tx } from '../../db/transaction.ts';
import { ApiError, duplicate, invalidField, notFound } from '../../domain/errors.ts';
import { emptyPage, mapPage, pageOf, type Page, type PageRequest } from '../../db/keyset.ts';
import { listSaleEvents, newEventId, recordEvent } from '../events/outbox.ts';
import type { ProgramContext } from '../../domain/program-context.ts';
import { normaliseEmail } from '../../domain/email.ts';
import { effectiveRate } from '../affiliates/affiliate.service.ts';
import { resolveAffiliateEmailFilter } from '../affiliates/affiliate-lookup.ts';
import { findRedeemableCode, redeemPromoCode } from '../coupons/promo-code-redemption.ts';
import { findReferralWithAffiliate, lockReferral, type ReferralRow } from '../referrals/referral.repository.ts';
import { insertOrGetCustomer } from '../referrals/referral.service.ts';
import { assertCreditable, findCreditByCode, findCreditByIdOrLink, type Credit } from '../ledger/credit.ts';
import {
  countCustomerSales,
  customerHasSale,
  deleteSaleRow,
  findSale,
  findSaleIdByInvoice,
  insertRefund,
  insertSaleWithItsWrites,
  listSaleRefunds,
  listSales,
  lockSale,
  sumFilteredSales,
  updateSaleRow,
  type CappedSaleTotals,
  type FilteredSaleTotals,
  type SaleFilter,
  type SaleRow,
} from './sale.repository.ts';
import type { CreateSaleBody, RefundSaleBody, Sale, UpdateSaleBody } from './sale.schema.ts';
import { counterLimit, countSales, creditOf, recountEditedSale } from '../ledger/counters.ts';
import { sumAffiliateSales, sumAllSaleDays } from '../ledger/ledger.repository.ts';
import { narrowsList } from '../../domain/list-filter.ts';
import { appendChangeEntries, saleEntryDueAt } from '../ledger/entries.ts';

export function serializeSale(row: SaleRow, program: ProgramContext): Sale {
  return {
    id: Number(row.id),
    affiliateId: row.affiliate_id,
    referralId: row.referral_id,
    externalId: row.external_id,
    externalInvoiceId: row.external_invoice_id,
    name: row.name,
    email: row.email,
    totalEarned: fromMinorUnits(row.total_earned, program.currency),
    commissionRate: millionthsToRate(row.commission_rate),
    createdAt: toIso(row.created_at),
    refundedAmount: fromMinorUnits(row.refunded_amount, program.currency),
    status: saleStatus(row),
    commission: fromMinorUnits(netCommission(row), program.currency),
  };
}

/** What the sale earns its affiliate now: its commission less what refunds took back. */
function netCommission(row: Pick<SaleRow, 'commission' | 'refunded_commission'>): number {
  return Number(row.commission) - Number(row.refunded_commission);
}

function ruleOf(row: Pick<SaleRow, 'commission_rule' | 'commission_rate' | 'commission_flat'>): SaleRule {
  if (row.commission_rule === 'flat') return { rule: 'flat', flatMinor: Number(row.commission_flat) };
  if (row.commission_rule === 'none') return { rule: 'none' };
  return { rule: 'percentage', rateMillionths: Number(row.commission_rate) };
}

function saleStatus(row: Pick<SaleRow, 'total_earned' | 'refunded_amount'>): Sale['status'] {
  const refunded = Number(row.refunded_amount);
  if (refunded === 0) return 'paid';
  return refunded >= Number(row.total_earned) ? 'refunded' : 'partially_refunded';
}

interface Customer {
  referral?: ReferralRow;
  credit?: Credit;
}

/**
 * Finds the customer and the affiliate to credit, in the spec's order of identifiers:
 * referralId (a referral, an affiliate id or a link), then email, then promoCode.
 */
async function findCustomer(tx: Tx, program: ProgramContext, body: CreateSaleBody): Promise<Customer> {
  // A known customer is read with the affiliate it credits, in one statement.
  const known = async (filter: { id: string } | { emailKey: string }): Promise<Customer | undefined> => {
    const found = await findReferralWithAffiliate(tx, program.id, filter);
    return found && { referral: found.referral, credit: { affiliate: found.affiliate, linkId: found.referral.link_id } };
  };
  const byEmail = () => (body.email === undefined ? undefined : known({ emailKey: normaliseEmail(body.email).key }));
  if (body.referralId !== undefined) {
    const customer = isUuid(body.referralId) ? await known({ id: body.referralId.toLowerCase() }) : undefined;
    if (customer) return customer;
    const credit = await findCreditByIdOrLink(tx, program, body.referralId);
    if (!credit) throw notFound('A referral, affiliate or link matching referralId');
    return { referral: (await byEmail())?.referral, credit };
  }
  const customer = await byEmail();
  if (!customer && body.promoCode === undefined) throw notFound(`A referral with e-mail ${body.email}`);
  return customer ?? {};
}

/**
 * Records a sale. `options.paidAt` (a billing provider's payment time, never after now) dates
 * it, so a late or retried delivery counts in the right month and the plan's window.
 */
export async function createSale(db: Db, program: ProgramContext, body: CreateSaleBody, options: { paidAt?: Date } = {}): Promise<Sale> {
  if (body.referralId === undefined && body.email === undefined && body.promoCode === undefined) {
    throw new ApiError('validation_failed', 'Name the customer.', [{ pointer: '#/referralId', detail: 'referralId, email or promoCode is required' }]);
  }
  const totalEarned = toMinorUnits(body.totalEarned, program.currency, '#/totalEarned');
  const bodyRate = body.commissionRate === undefined ? undefined : rateToMillionths(body.commissionRate, '#/commissionRate');

  const invoiceKey = body.externalInvoiceId ? body.externalInvoiceId : null;
  const now = program.clock();
  const createdAt = options.paidAt !== undefined && options.paidAt.getTime() < now.getTime() ? options.paidAt : now;
  const work = (tx: Tx) => sellInTransaction(tx, program, body, { totalEarned, bodyRate, invoiceKey, createdAt });
  if (invoiceKey === null) return inTransaction(db, work);
  // An invoice pays commission once: a retried billing webhook gets the sale already recorded.
  return inTransactionOnce(
    db,
    {
      column: 'invoice_key',
      findExisting: (q) => findSaleIdByInvoice(q, program.id, invoiceKey),
      duplicateOf: (existingId) => duplicate('duplicate_sale', `A sale with externalInvoiceId "${invoiceKey}" is already recorded in this program.`, existingId),
    },
    work,
  );
}

async function sellInTransaction(
  tx: Tx,
  program: ProgramContext,
  body: CreateSaleBody,
  { totalEarned, bodyRate, invoiceKey, createdAt }: { totalEarned: number; bodyRate: number | undefined; invoiceKey: string | null; createdAt: Date },
): Promise<Sale> {
  const code = body.promoCode === undefined ? undefined : await findRedeemableCode(tx, program, body.promoCode);
  let { referral, credit } = await findCustomer(tx, program, body);
  credit ??= await findCreditByCode(tx, program, code!);
  assertCreditable(credit);

  // firstTimeOrder: lock the customer first, so that the check sees any concurrent first order.
  if (referral && code?.code.first_time_order) await lockReferral(tx, referral.id);
  // Only a code's firstTimeOrder rule asks whether the customer ordered before.
  let hasOrdered = referral && code?.code.first_time_order ? await customerHasSale(tx, referral.id) : false;
  if (!referral) {
    // A new customer: recorded as a referral of the credited affiliate.
    if (body.name === undefined) throw invalidField('#/name', 'is required when the customer is not found');
    if (body.email === undefined) throw invalidField('#/email', 'is required when the customer is not found');
    const customer = await insertOrGetCustomer(tx, program, credit, {
      name: body.name,
      email: body.email,
      externalId: '',
      promotionalCodeId: code?.code.id ?? null,
    });
    referral = customer.row;
    // Recorded meanwhile by a concurrent sale, which may be this customer's first order.
    if (!customer.created && code?.code.first_time_order) {
      await lockReferral(tx, referral.id);
      hasOrdered = await customerHasSale(tx, referral.id);
    }
  }

  const rate = bodyRate ?? effectiveRate(credit.affiliate, program);
  const rule = await ruleForNewSale(tx, program, referral, { rate, bodyRate, at: createdAt });
  const commission = commissionUnder(rule, totalEarned);
  const row = {
    program_id: program.id,
    affiliate_id: credit.affiliate.id,
    referral_id: referral.id,
    link_id: credit.linkId,
    promotional_code_id: code?.code.id ?? null,
    external_id: body.externalId ?? '',
    external_invoice_id: body.externalInvoiceId ?? '',
    invoice_key: invoiceKey,
    name: body.name?.trim() ?? referral.name,
    email: referral.email,
    total_earned: totalEarned,
    commission_rate: rate,
    commission,
    commission_rule: rule.rule,
    commission_flat: rule.rule === 'flat' ? rule.flatMinor : 0,
    refunded_amount: 0,
    refunded_commission: 0,
    created_at: createdAt.toISOString(),
  };
  const sale = await recordNewSale(tx, program, { ...row, updated_at: row.created_at });
  // Redeemed after the affiliate and link counters, as POST /referrals does: every transaction
  // locks affiliate and link rows before code and coupon rows, so two cannot deadlock on
  // PostgreSQL, and a hot code's row stays locked only for the end of the transaction.
  if (code) {
    await redeemPromoCode(tx, program, code, {
      affiliateId: credit.affiliate.id,
      customerExternalId: referral.referred_user_external_id,
      customerHasOrdered: hasOrdered,
      totalEarnedMinor: totalEarned,
    });
  }
  return sale;
}

/**
 * Writes a new sale and what goes with it — the counters it adds to, its ledger entry, its
 * sale.created event (sale.repository: one statement on PostgreSQL) — and returns it as the API
 * answers it.
 */
async function recordNewSale(tx: Tx, program: ProgramContext, row: Omit<SaleRow, 'id'>): Promise<Sale> {
  // The event's data is the answer with the id the database gives; `{"id":0,` is its start.
  const withoutId = JSON.stringify(serializeSale({ ...row, id: 0 }, program));
  if (!withoutId.startsWith('{"id":0,')) throw new Error('serializeSale must put the id first');
  const written = await insertSaleWithItsWrites(tx, row, {
    currency: program.currency,
    dueAt: saleEntryDueAt(program, toIso(row.created_at)),
    eventId: newEventId(),
    eventDataAfterId: withoutId.slice('{"id":0,'.length),
  });
  if (!written.affiliateMoved) throw counterLimit('#/totalEarned', "the affiliate's totalCommissionEarned");
  if (!written.linkMoved) throw counterLimit('#/totalEarned', "the link's totalRevenue");
  return serializeSale({ ...row, id: written.id }, program);
}

/**
 * The rule a new sale is recorded under: outside the plan (too long after the customer's
 * referral, or past their first N sales) it earns nothing; otherwise an explicit
 * commissionRate, else the plan's percentage (the affiliate's own rate wins) or flat amount.
 */
async function ruleForNewSale(tx: Tx, program: ProgramContext, referral: ReferralRow, sale: { rate: number; bodyRate: number | undefined; at: Date }): Promise<SaleRule> {
  const plan = program.plan;
  let earlierSales = 0;
  if (plan.maxSalesPerCustomer !== null) {
    // Two sales of one customer at once must count each other: the customer's row is the lock.
    await lockReferral(tx, referral.id);
    earlierSales = await countCustomerSales(tx, referral.id);
  }
  if (!earnsUnderPlan(plan, { at: sale.at, referredAt: new Date(toIso(referral.created_at)), earlierSales })) return { rule: 'none' };
  if (sale.bodyRate !== undefined || plan.type === 'percentage') return { rule: 'percentage', rateMillionths: sale.rate };
  return { rule: 'flat', flatMinor: plan.flatAmount };
}

/** The id of the program's sale of an invoice (externalInvoiceId), if any. */
export function findSaleIdOfInvoice(db: Db, program: ProgramContext, invoiceKey: string): Promise<number | undefined> {
  return findSaleIdByInvoice(db, program.id, invoiceKey);
}

export type SaleQuery = SaleFilter & { affiliateEmail?: string };

export async function getSale(db: Db, program: ProgramContext, query: SaleQuery): Promise<Sale> {
  const filter = await resolveAffiliateEmailFilter(db, program, query);
  const row = filter && (await findSale(db, program.id, filter));
  if (!row) throw notFound('Sale');
  return serializeSale(row, program);
}

/** A page of sales; an `affiliateEmail` no affiliate has gives an empty page. */
export async function getSalePage(db: Db, program: ProgramContext, query: SaleQuery, page: PageRequest): Promise<Page<Sale>> {
  const filter = await resolveAffiliateEmailFilter(db, program, query);
  if (!filter) return emptyPage();
  return mapPage(pageOf(await listSales(db, program.id, filter, page), page), (row) => serializeSale(row, program));
}

/** The UTC day (YYYY-MM-DD) an instant is the midnight of; undefined for none, null when it is not a day's start. */
function utcDayAt(instant: string | undefined): string | undefined | null {
  if (instant === undefined) return undefined;
  return /^\d{4}-\d{2}-\d{2}T00:00:00(\.0+)?Z$/.test(instant) ? instant.slice(0, 10) : null;
}

/**
 * What the sales a filter matches add up to (the dashboard's totals line), in minor units. With
 * no filter, the program's kept sale_days (a few rows a day) rather than every sale — with a
 * range of whole UTC days alone, those days' rows —, and with one affiliate alone that
 * affiliate's kept counters; a search
 * matching more than SEARCH_COUNT_CAP sales only says so (db/text-search.ts).
 */
export function getSaleTotals(db: Db, program: ProgramContext, filter: SaleFilter): Promise<FilteredSaleTotals | CappedSaleTotals> {
  if (!narrowsList(filter)) return sumAllSaleDays(db, program.id);
  // Whole UTC days and nothing else (the dashboard's date filter): the kept days in the range.
  const { createdFrom, createdBefore, ...others } = filter;
  const [from, before] = [utcDayAt(createdFrom), utcDayAt(createdBefore)];
  if (!narrowsList(others) && from !== null && before !== null) return sumAllSaleDays(db, program.id, { from, before });
  // One affiliate and nothing else: its kept counters (ledger/counters.ts), not its sales.
  if (filter.affiliateId !== undefined && !narrowsList({ ...filter, affiliateId: undefined })) return sumAffiliateSales(db, program.id, filter.affiliateId);
  return sumFilteredSales(db, program.id, filter);
}

/** A sale as its dashboard page shows it: the API's Sale, and how its commission came about (amounts in major units). */
export interface SaleDetail extends Sale {
  /** The rule it was recorded under: none when it fell outside the program's commission plan. */
  commissionRule: SaleRule['rule'];
  /** The commission before refunds (`commission` is net of them), and what refunds took back. */
  grossCommission: number;
  refundedCommission: number;
  /** What is not refunded yet: what a refund may still take. */
  notRefunded: number;
}

export interface SaleHistory {
  sale: SaleDetail;
  /** Its refunds, oldest first: the amount and the commission each took back. */
  refunds: { amount: number; commission: number; createdAt: string }[];
  /** The events reported about it (see listSaleEvents for the bound). */
  events: { id: string; type: string; createdAt: string }[];
}

/** One sale for its dashboard page: the sale, its refunds and its events; 404 when it is not the program's. */
export async function getSaleHistory(db: Db, program: ProgramContext, id: number): Promise<SaleHistory> {
  const row = await findSale(db, program.id, { id });
  if (!row) throw notFound('Sale');
  const [refunds, events] = await Promise.all([listSaleRefunds(db, program.id, id), listSaleEvents(db, program.id, id, toIso(row.created_at))]);
  const money = (minor: number | string) => fromMinorUnits(minor, program.currency);
  return {
    sale: {
      ...serializeSale(row, program),
      commissionRule: row.commission_rule,
      grossCommission: money(row.commission),
      refundedCommission: money(row.refunded_commission),
      notRefunded: money(Number(row.total_earned) - Number(row.refunded_amount)),
    },
    refunds: refunds.map((r) => ({ amount: money(r.amount), commission: money(r.commission), createdAt: toIso(r.created_at) })),
    events: events.map((e) => ({ id: e.id, type: e.type, createdAt: toIso(e.created_at) })),
  };
}

async function lockedSale(tx: Tx, program: ProgramContext, filter: { id: number } | { invoiceKey: string }): Promise<SaleRow> {
  const row = await lockSale(tx, program.id, filter);
  if (!row) throw notFound('Sale');
  return row;
}

/**
 * PUT /sales: changes the customer name or e-mail shown on the sale, the amount or the rate;
 * the commission is recomputed, refunds keep their share of it, and the counters move by the
 * exact difference.
 */
export async function updateSale(db: Db, program: ProgramContext, id: number, body: UpdateSaleBody): Promise<Sale> {
  const totalEarned = body.totalEarned === undefined ? undefined : toMinorUnits(body.totalEarned, program.currency, '#/totalEarned');
  const rate = body.commissionRate === undefined ? undefined : rateToMillionths(body.commissionRate, '#/commissionRate');
  return inTransaction(db, async (tx) => {
    const before = await lockedSale(tx, program, { id });
    const now = program.clock().toISOString();
    const after: SaleRow = { ...before, updated_at: now };
    if (body.name !== undefined) after.name = body.name.trim();
    if (body.email !== undefined) after.email = normaliseEmail(body.email).email;
    if (totalEarned !== undefined || rate !== undefined) {
      after.total_earned = totalEarned ?? Number(before.total_earned);
      after.commission_rate = rate ?? Number(before.commission_rate);
      // An explicit rate is the merchant's decision and makes the sale a percentage one; else it keeps its rule.
      if (rate !== undefined) Object.assign(after, { commission_rule: 'percentage', commission_flat: 0 });
      const refunded = Number(before.refunded_amount);
      if (after.total_earned < refunded) {
        throw invalidField('#/totalEarned', `must be at least the ${fromMinorUnits(refunded, program.currency)} already refunded`);
      }
      after.commission = commissionUnder(ruleOf(after), after.total_earned);
      after.refunded_commission = commissionTakenBack(after.commission, refunded, after.total_earned);
    }
    await updateSaleRow(tx, program.id, id, {
      name: after.name,
      email: after.email,
      total_earned: after.total_earned,
      commission_rate: after.commission_rate,
      commission: after.commission,
      commission_rule: after.commission_rule,
      commission_flat: after.commission_flat,
      refunded_commission: after.refunded_commission,
      updated_at: now,
    });
    await recountEditedSale(tx, before, after, body.totalEarned === undefined ? '#/commissionRate' : '#/totalEarned');
    await appendChangeEntries(tx, program, 'adjustment', [{ saleId: id, affiliateId: before.affiliate_id, amount: netCommission(after) - netCommission(before) }], now);
    const sale = serializeSale(after, program);
    await recordEvent(tx, program.id, 'sale.updated', sale, now);
    return sale;
  });
}

/**
 * DELETE /sales voids a sale: it leaves the lists and every counter, with its refunds. A code
 * it redeemed stays redeemed (the customer had the discount). Answers the sale as it was.
 */
export async function voidSale(db: Db, program: ProgramContext, id: number): Promise<Sale> {
  return inTransaction(db, async (tx) => {
    const row = await lockedSale(tx, program, { id });
    const now = program.clock().toISOString();
    await deleteSaleRow(tx, program.id, id);
    await countSales(tx, program.id, [creditOf(row)], -1);
    await appendChangeEntries(tx, program, 'void', [{ saleId: id, affiliateId: row.affiliate_id, amount: -netCommission(row) }], now);
    const sale = serializeSale(row, program);
    await recordEvent(tx, program.id, 'sale.deleted', sale, now);
    return sale;
  });
}

/**
 * POST /sales/refund: pays back part or all of what is left of a sale. The commission is taken
 * back in proportion (computed on the running total, so a sale refunded in parts ends at exactly
 * zero); each refund is kept as its own row and reported as sale.refunded.
 */
export async function refundSale(db: Db, program: ProgramContext, body: RefundSaleBody, options: { upToRefundedMinor?: number } = {}): Promise<Sale> {
  if (body.saleId === undefined && body.externalInvoiceId === undefined) throw invalidField('#/saleId', 'saleId or externalInvoiceId is required');
  const requested = body.amount === undefined ? undefined : toMinorUnits(body.amount, program.currency, '#/amount');
  return inTransaction(db, async (tx) => {
    const before = await lockedSale(tx, program, body.saleId !== undefined ? { id: body.saleId } : { invoiceKey: body.externalInvoiceId! });
    if (body.saleId !== undefined && body.externalInvoiceId !== undefined && before.external_invoice_id !== body.externalInvoiceId) {
      throw notFound('A sale with that saleId and externalInvoiceId');
    }
    const left = Number(before.total_earned) - Number(before.refunded_amount);
    if (left === 0) throw invalidField('#/saleId', 'names a sale that is already fully refunded');
    // A provider's cumulative refunded total (Stripe's amount_refunded): refund what goes beyond
    // what is already refunded, read under the sale's lock so two deliveries never refund twice.
    const beyond = options.upToRefundedMinor === undefined ? undefined : Math.min(options.upToRefundedMinor, Number(before.total_earned)) - Number(before.refunded_amount);
    if (beyond !== undefined && beyond <= 0) throw invalidField('#/amount', 'is nothing beyond what is already refunded');
    const amount = beyond ?? requested ?? left;
    if (amount > left) throw invalidField('#/amount', `is more than the ${fromMinorUnits(left, program.currency)} not yet refunded`);
    const now = program.clock().toISOString();
    const refundedAmount = Number(before.refunded_amount) + amount;
    const refundedCommission = commissionTakenBack(Number(before.commission), refundedAmount, Number(before.total_earned));
    const after: SaleRow = { ...before, refunded_amount: refundedAmount, refunded_commission: refundedCommission, updated_at: now };
    await updateSaleRow(tx, program.id, Number(before.id), { refunded_amount: refundedAmount, refunded_commission: refundedCommission, updated_at: now });
    await insertRefund(tx, {
      id: newId(),
      program_id: program.id,
      sale_id: Number(before.id),
      amount,
      commission: refundedCommission - Number(before.refunded_commission),
      created_at: now,
    });
    await recountEditedSale(tx, before, after);
    const takenBack = refundedCommission - Number(before.refunded_commission);
    await appendChangeEntries(tx, program, 'refund', [{ saleId: Number(before.id), affiliateId: before.affiliate_id, amount: -takenBack }], now);
    const sale = serializeSale(after, program);
    await recordEvent(tx, program.id, 'sale.refunded', sale, now);
    return sale;
  });
}
