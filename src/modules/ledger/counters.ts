import { affiliateShardOf } from '../../domain/ids.ts';
import type { Tx } from '../../db/transaction.ts';
import { invalidField } from '../../domain/errors.ts';
import { MAX_MINOR_UNITS } from '../../domain/money.ts';
import type { SalesTable } from '../../db/schema.ts';
import type { Selectable } from 'kysely';
import { addToAffiliateCounters, addToLinkCounters, addToSaleDays, deleteSalesOf, saleDayOf, type SaleCredit, type SalesOf, type VoidedSale } from './ledger.repository.ts';
import type { ProgramContext } from '../../domain/program-context.ts';
import { appendChangeEntries } from './entries.ts';

type SaleRow = Selectable<SalesTable>;

/** What a sale adds to the counters of the affiliate and link it credits: net of its refunds. */
export function creditOf(row: Pick<SaleRow, 'affiliate_id' | 'link_id' | 'created_at' | 'total_earned' | 'refunded_amount' | 'commission' | 'refunded_commission'>): SaleCredit {
  return {
    affiliate_id: row.affiliate_id,
    link_id: row.link_id,
    day: saleDayOf(row.created_at),
    amount: Number(row.total_earned),
    refunded: Number(row.refunded_amount),
    commission: Number(row.commission) - Number(row.refunded_commission),
  };
}

/**
 * Adds sales to (sign 1) or takes them from (sign -1) the counters of what they credit: the
 * affiliate's totalCommissionEarned and its sales' count, amount and refunds, the link's sales
 * and totalRevenue, and the program's sale_days. The one place sale counters change after a sale is written, so every path (edit,
 * refund, void, cascade) keeps them equal to a recount of the rows. The sale_days rows come
 * last (see addToSaleDays).
 */
export async function countSales(tx: Tx, programId: string, credits: SaleCredit[], sign: 1 | -1, countsAsSale = true, pointer = '#/totalEarned'): Promise<void> {
  // In one order (by affiliate), so two cascades over the same affiliates lock them alike.
  const ordered = credits.length > 1 ? [...credits].sort((a, b) => (a.affiliate_id < b.affiliate_id ? -1 : a.affiliate_id > b.affiliate_id ? 1 : 0)) : credits;
  for (const credit of ordered) {
    const revenue = credit.amount - credit.refunded;
    const moves = credit.commission !== 0 || countsAsSale || credit.amount !== 0 || credit.refunded !== 0;
    const delta = { referredUsers: 0, commission: sign * credit.commission, sales: countsAsSale ? sign : 0, amount: sign * credit.amount, refunded: sign * credit.refunded };
    if (moves && !(await addToAffiliateCounters(tx, credit.affiliate_id, delta))) {
      throw counterLimit(pointer, "the affiliate's totalCommissionEarned");
    }
    if (credit.link_id !== null && (countsAsSale || revenue !== 0)) {
      if (!(await addToLinkCounters(tx, credit.link_id, { referrals: 0, sales: countsAsSale ? sign : 0, revenue: sign * revenue }))) {
        throw counterLimit(pointer, "the link's totalRevenue");
      }
    }
  }
  await addToSaleDays(
    tx,
    programId,
    credits.map((credit) => ({
      day: credit.day,
      shard: affiliateShardOf(credit.affiliate_id),
      sales: countsAsSale ? sign : 0,
      amount: sign * credit.amount,
      refunded: sign * credit.refunded,
      commission: sign * credit.commission,
    })),
  );
}

/**
 * A sale that would take a total past MAX_MINOR_UNITS is refused (the transaction rolls back):
 * a larger total would be stored exactly but answered as a JSON number that drifted.
 */
export function counterLimit(pointer: string, total: string) {
  return invalidField(pointer, `would take ${total} past ${MAX_MINOR_UNITS} minor units, the largest total kept exactly`);
}

/** The counters' share of an edit or refund: the sale stays, what it adds changes. */
export function recountEditedSale(tx: Tx, before: SaleRow, after: SaleRow, pointer?: string): Promise<void> {
  const [was, is] = [creditOf(before), creditOf(after)];
  const difference = { ...is, amount: is.amount - was.amount, refunded: is.refunded - was.refunded, commission: is.commission - was.commission };
  return countSales(tx, after.program_id, [difference], 1, false, pointer);
}

/** A referred customer counted on (sign 1) or taken from (sign -1) the affiliate and the link that brought them. */
export async function countCustomer(tx: Tx, credited: { affiliateId: string; linkId: string | null }, sign: 1 | -1): Promise<void> {
  await addToAffiliateCounters(tx, credited.affiliateId, { referredUsers: sign, commission: 0 });
  if (credited.linkId !== null) await addToLinkCounters(tx, credited.linkId, { referrals: sign, sales: 0, revenue: 0 });
}

/**
 * What a cascade delete takes back: deletes a referral's sales, an affiliate's, or those of an
 * affiliate's referrals that credit someone else; takes each from the counters of whoever it
 * credited and writes its `void` entry. Returns what each added, so the caller can announce the
 * totals that changed.
 */
export async function voidSalesOf(tx: Tx, program: ProgramContext, of: SalesOf, now: string): Promise<VoidedSale[]> {
  const voided = await deleteSalesOf(tx, program.id, of);
  await countSales(tx, program.id, voided, -1);
  await appendChangeEntries(tx, program, 'void', voided.map((sale) => ({ saleId: sale.sale_id, affiliateId: sale.affiliate_id, amount: -sale.commission })), now);
  return voided;
}
