import { commissionFor, millionthsToRate, rateToMillionths } from '../../domain/commission.ts';
import { fromMinorUnits, toMinorUnits } from '../../domain/money.ts';
import { toIso } from '../../domain/clock.ts';
import { isUuid } from '../../domain/ids.ts';
import { inTransaction, inTransactionOnce, type Db, type Tx } from '../../db/transaction.ts';
import { ApiError, duplicate, invalidField, notFound } from '../../domain/errors.ts';
import type { PageRequest } from '../../db/keyset.ts';
import { recordEvent } from '../events/outbox.ts';
import type { ProgramContext } from '../programs/program.service.ts';
import { normaliseEmail } from '../users/user.service.ts';
import { addToAffiliateCounters } from '../affiliates/affiliate.repository.ts';
import { effectiveRate } from '../affiliates/affiliate.service.ts';
import { addToLinkCounters } from '../links/link.repository.ts';
import { findRedeemableCode, redeemPromoCode } from '../promotional-codes/promo-code-redemption.ts';
import { findReferralWithAffiliate, lockReferral, type ReferralRow } from '../referrals/referral.repository.ts';
import { assertCreditable, findCreditByCode, findCreditByIdOrLink, insertCustomer, type Credit } from '../referrals/referral.service.ts';
import { customerHasSale, findSale, findSaleIdByInvoice, insertSale, listSales, type SaleFilter, type SaleRow } from './sale.repository.ts';
import type { CreateSaleBody, Sale } from './sale.schema.ts';

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
  };
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

export async function createSale(db: Db, program: ProgramContext, body: CreateSaleBody): Promise<Sale> {
  if (body.referralId === undefined && body.email === undefined && body.promoCode === undefined) {
    throw new ApiError('validation_failed', 'Name the customer.', [{ pointer: '#/referralId', detail: 'referralId, email or promoCode is required' }]);
  }
  const totalEarned = toMinorUnits(body.totalEarned, program.currency, '#/totalEarned');
  const bodyRate = body.commissionRate === undefined ? undefined : rateToMillionths(body.commissionRate, '#/commissionRate');

  const invoiceKey = body.externalInvoiceId ? body.externalInvoiceId : null;
  const work = (tx: Tx) => sellInTransaction(tx, program, body, { totalEarned, bodyRate, invoiceKey });
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
  { totalEarned, bodyRate, invoiceKey }: { totalEarned: number; bodyRate: number | undefined; invoiceKey: string | null },
): Promise<Sale> {
  const code = body.promoCode === undefined ? undefined : await findRedeemableCode(tx, program, body.promoCode);
  let { referral, credit } = await findCustomer(tx, program, body);
  credit ??= await findCreditByCode(tx, program, code!);
  assertCreditable(credit);

  // firstTimeOrder: lock the customer first, so that the check sees any concurrent first order.
  if (referral && code?.code.first_time_order) await lockReferral(tx, referral.id);
  // Only a code's firstTimeOrder rule asks whether the customer ordered before.
  const hasOrdered = referral && code?.code.first_time_order ? await customerHasSale(tx, referral.id) : false;
  if (!referral) {
    // A new customer: recorded as a referral of the credited affiliate.
    if (body.name === undefined) throw invalidField('#/name', 'is required when the customer is not found');
    if (body.email === undefined) throw invalidField('#/email', 'is required when the customer is not found');
    referral = await insertCustomer(tx, program, credit, {
      name: body.name,
      email: body.email,
      externalId: '',
      promotionalCodeId: code?.code.id ?? null,
    });
  }

  const rate = bodyRate ?? effectiveRate(credit.affiliate, program);
  const commission = commissionFor(totalEarned, rate);
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
    created_at: program.clock().toISOString(),
  };
  const id = await insertSale(tx, row);
  await addToAffiliateCounters(tx, credit.affiliate.id, { referredUsers: 0, commission });
  if (credit.linkId !== null) await addToLinkCounters(tx, credit.linkId, { referrals: 0, sales: 1, revenue: totalEarned });
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
  const sale = serializeSale({ ...row, id }, program);
  await recordEvent(tx, program.id, 'sale.created', sale, row.created_at);
  return sale;
}

export async function getSale(db: Db, program: ProgramContext, filter: SaleFilter): Promise<Sale> {
  const row = await findSale(db, program.id, filter);
  if (!row) throw notFound('Sale');
  return serializeSale(row, program);
}

export function getSalePage(db: Db, program: ProgramContext, filter: SaleFilter, page: PageRequest) {
  return listSales(db, program.id, filter, page);
}
