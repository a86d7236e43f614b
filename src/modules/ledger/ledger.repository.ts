import { sql } from 'kysely';
import type { ClicksTable } from '../../db/schema.ts';
import type { Db, Tx } from '../../db/transaction.ts';
import { newId } from '../../domain/ids.ts';
import { MAX_MINOR_UNITS } from '../../domain/money.ts';

// Every write to a counter column (affiliates', links', daily clicks) and every delete of
// credited sales: the ledger's statements, so the money rules in counters.ts have one place
// below them.

/**
 * Moves the affiliate's counters by `delta`. False, and nothing changed, when the commission
 * total would pass MAX_MINOR_UNITS (it could no longer be answered exactly as a JSON number).
 */
export async function addToAffiliateCounters(
  tx: Tx,
  affiliateId: string,
  delta: { referredUsers: number; commission: number },
): Promise<boolean> {
  // Counters are aggregates, not edits: updated_at is left alone.
  let q = tx
    .updateTable('affiliates')
    .set((eb) => ({
      number_of_referred_users: eb('number_of_referred_users', '+', delta.referredUsers),
      total_commission_earned: eb('total_commission_earned', '+', delta.commission),
    }))
    .where('id', '=', affiliateId);
  if (delta.commission > 0) q = q.where('total_commission_earned', '<=', MAX_MINOR_UNITS - delta.commission);
  const { numUpdatedRows } = await q.executeTakeFirst();
  return delta.commission <= 0 || numUpdatedRows > 0n;
}

/** Moves the link's counters by `delta`. False, and nothing changed, when the revenue total would pass MAX_MINOR_UNITS. */
export async function addToLinkCounters(tx: Tx, linkId: string, delta: { referrals: number; sales: number; revenue: number }): Promise<boolean> {
  let q = tx
    .updateTable('affiliate_links')
    .set((eb) => ({
      referrals: eb('referrals', '+', delta.referrals),
      sales: eb('sales', '+', delta.sales),
      total_revenue: eb('total_revenue', '+', delta.revenue),
    }))
    .where('id', '=', linkId);
  if (delta.revenue > 0) q = q.where('total_revenue', '<=', MAX_MINOR_UNITS - delta.revenue);
  const { numUpdatedRows } = await q.executeTakeFirst();
  return delta.revenue <= 0 || numUpdatedRows > 0n;
}

/** Adds a counted click to the affiliate's and the link's counters and to the link's day. */
export async function addClickToCounters(tx: Tx, click: Pick<ClicksTable, 'program_id' | 'affiliate_id' | 'day'> & { link_id: string }): Promise<void> {
  await tx.updateTable('affiliates').set((eb) => ({ number_of_clicks: eb('number_of_clicks', '+', 1) })).where('id', '=', click.affiliate_id).execute();
  await tx.updateTable('affiliate_links').set((eb) => ({ clicks: eb('clicks', '+', 1) })).where('id', '=', click.link_id).execute();
  await tx
    .insertInto('click_days')
    .values({ id: newId(), program_id: click.program_id, affiliate_id: click.affiliate_id, link_id: click.link_id, day: click.day, clicks: 1 })
    .onConflict((conflict) => conflict.columns(['link_id', 'day']).doUpdateSet({ clicks: sql`click_days.clicks + 1` }))
    .execute();
}

/** A sale's place in the counters: the affiliate and link it credits, and what it adds to them. */
export interface SaleCredit {
  affiliate_id: string;
  link_id: string | null;
  /** Minor units, net of refunds. */
  revenue: number;
  commission: number;
}

/**
 * Deletes the sales of a referral, or those of an affiliate's referrals that credit someone
 * else, and returns what each added to the counters. Deleting first takes the rows' locks in
 * the same order a refund does (sale, then affiliate), and the returned values are the rows as
 * they were deleted, so no concurrent refund is counted twice or lost.
 */
export async function deleteSalesOf(tx: Tx, programId: string, of: { referralId: string } | { referralsOfAffiliateCreditingOthers: string }): Promise<SaleCredit[]> {
  let q = tx.deleteFrom('sales').where('program_id', '=', programId);
  if ('referralId' in of) {
    q = q.where('referral_id', '=', of.referralId);
  } else {
    const affiliateId = of.referralsOfAffiliateCreditingOthers;
    q = q.where('affiliate_id', '<>', affiliateId).where('referral_id', 'in', (eb) => eb.selectFrom('referrals as r').select('r.id').where('r.affiliate_id', '=', affiliateId));
  }
  const rows = await q
    .returning(['affiliate_id', 'link_id', sql<number | string>`total_earned - refunded_amount`.as('revenue'), sql<number | string>`commission - refunded_commission`.as('commission')])
    .execute();
  return rows.map((r) => ({ affiliate_id: r.affiliate_id, link_id: r.link_id, revenue: Number(r.revenue), commission: Number(r.commission) }));
}

export async function countSalesOf(db: Db | Tx, programId: string, of: { referralId: string } | { affiliateId: string }): Promise<number> {
  let q = db.selectFrom('sales').select((eb) => eb.fn.countAll().as('n')).where('program_id', '=', programId);
  q = 'referralId' in of ? q.where('referral_id', '=', of.referralId) : q.where('affiliate_id', '=', of.affiliateId);
  const { n } = await q.executeTakeFirstOrThrow();
  return Number(n);
}

