import { sql, type Insertable, type Selectable } from 'kysely';
import { compiledInsert, compiledQuery } from '../../db/compiled-query.ts';
import { pageQuery, type PageRequest } from '../../db/keyset.ts';
import type { ClicksTable, CommissionEntriesTable } from '../../db/schema.ts';
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
  const bounded = delta.commission > 0;
  const params = { affiliateId, referredUsers: delta.referredUsers, commission: delta.commission, highest: MAX_MINOR_UNITS - delta.commission };
  const { numAffectedRows } = await affiliateCountersQuery.run(tx, params, bounded ? 'bounded' : 'unbounded');
  return !bounded || numAffectedRows! > 0n;
}

type CounterShape = 'bounded' | 'unbounded';

// Counters are aggregates, not edits: updated_at is left alone. A growing total is bounded
// (`highest`: what it may be before the change) so that it never passes MAX_MINOR_UNITS.
const affiliateCountersQuery = compiledQuery<{ affiliateId: string; referredUsers: number; commission: number; highest: number }, never, CounterShape>(
  (db, param, shape) => {
    const q = db
      .updateTable('affiliates')
      .set((eb) => ({
        number_of_referred_users: eb('number_of_referred_users', '+', param('referredUsers')),
        total_commission_earned: eb('total_commission_earned', '+', param('commission')),
      }))
      .where('id', '=', param('affiliateId'));
    return shape === 'bounded' ? q.where('total_commission_earned', '<=', param('highest')) : q;
  },
);

const linkCountersQuery = compiledQuery<{ linkId: string; referrals: number; sales: number; revenue: number; highest: number }, never, CounterShape>(
  (db, param, shape) => {
    const q = db
      .updateTable('affiliate_links')
      .set((eb) => ({
        referrals: eb('referrals', '+', param('referrals')),
        sales: eb('sales', '+', param('sales')),
        total_revenue: eb('total_revenue', '+', param('revenue')),
      }))
      .where('id', '=', param('linkId'));
    return shape === 'bounded' ? q.where('total_revenue', '<=', param('highest')) : q;
  },
);

/** Moves the link's counters by `delta`. False, and nothing changed, when the revenue total would pass MAX_MINOR_UNITS. */
export async function addToLinkCounters(tx: Tx, linkId: string, delta: { referrals: number; sales: number; revenue: number }): Promise<boolean> {
  const bounded = delta.revenue > 0;
  const { numAffectedRows } = await linkCountersQuery.run(tx, { linkId, ...delta, highest: MAX_MINOR_UNITS - delta.revenue }, bounded ? 'bounded' : 'unbounded');
  return !bounded || numAffectedRows! > 0n;
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
export type SalesOf = { referralId: string } | { referralsOfAffiliateCreditingOthers: string } | { affiliateId: string };

/** A sale deleted by a cascade: its id, for the ledger's void entry. */
export type VoidedSale = SaleCredit & { sale_id: number };

export async function deleteSalesOf(tx: Tx, programId: string, of: SalesOf): Promise<VoidedSale[]> {
  let q = tx.deleteFrom('sales').where('program_id', '=', programId);
  if ('referralId' in of) {
    q = q.where('referral_id', '=', of.referralId);
  } else if ('affiliateId' in of) {
    q = q.where('affiliate_id', '=', of.affiliateId);
  } else {
    const affiliateId = of.referralsOfAffiliateCreditingOthers;
    q = q.where('affiliate_id', '<>', affiliateId).where('referral_id', 'in', (eb) => eb.selectFrom('referrals as r').select('r.id').where('r.affiliate_id', '=', affiliateId));
  }
  const rows = await q
    .returning(['id', 'affiliate_id', 'link_id', sql<number | string>`total_earned - refunded_amount`.as('revenue'), sql<number | string>`commission - refunded_commission`.as('commission')])
    .execute();
  return rows.map((r) => ({ sale_id: Number(r.id), affiliate_id: r.affiliate_id, link_id: r.link_id, revenue: Number(r.revenue), commission: Number(r.commission) }));
}

export async function countSalesOf(db: Db | Tx, programId: string, of: { referralId: string } | { affiliateId: string }): Promise<number> {
  let q = db.selectFrom('sales').select((eb) => eb.fn.countAll().as('n')).where('program_id', '=', programId);
  q = 'referralId' in of ? q.where('referral_id', '=', of.referralId) : q.where('affiliate_id', '=', of.affiliateId);
  const { n } = await q.executeTakeFirstOrThrow();
  return Number(n);
}


const insertEntriesQuery = compiledInsert('commission_entries');

export async function insertEntries(tx: Tx, rows: Insertable<CommissionEntriesTable>[]): Promise<void> {
  // One entry (a sale's own, the common case) by a compiled statement; several in one insert.
  if (rows.length === 1) await insertEntriesQuery.run(tx, rows[0]!);
  else if (rows.length > 0) await tx.insertInto('commission_entries').values(rows).execute();
}

/** Where each sale's own `sale` entry stands: when it falls due, and whether a payout took it. */
export async function saleEntryStates(tx: Tx, programId: string, saleIds: number[]): Promise<Map<number, { dueAt: string | Date; settled: boolean }>> {
  if (saleIds.length === 0) return new Map();
  const rows = await tx
    .selectFrom('commission_entries')
    .select(['sale_id', 'due_at', 'payout_id', 'paid_at'])
    .where('program_id', '=', programId)
    .where('kind', '=', 'sale')
    .where('sale_id', 'in', saleIds)
    .execute();
  return new Map(rows.map((r) => [Number(r.sale_id), { dueAt: r.due_at, settled: r.payout_id !== null || r.paid_at !== null }]));
}

export type EntryRow = Selectable<CommissionEntriesTable>;

export interface EntryFilter {
  affiliateId?: string;
  saleId?: number;
  payoutId?: string;
  /** pending, due or paid at `now`. */
  status?: { is: 'pending' | 'due' | 'paid'; now: string };
}

export function listEntries(db: Db, programId: string, filter: EntryFilter, page: PageRequest): Promise<EntryRow[]> {
  let q = db.selectFrom('commission_entries as e').selectAll('e').where('e.program_id', '=', programId);
  if (filter.affiliateId !== undefined) q = q.where('e.affiliate_id', '=', filter.affiliateId);
  if (filter.saleId !== undefined) q = q.where('e.sale_id', '=', filter.saleId);
  if (filter.payoutId !== undefined) q = q.where('e.payout_id', '=', filter.payoutId);
  if (filter.status !== undefined) {
    const { is, now } = filter.status;
    if (is === 'paid') q = q.where('e.paid_at', 'is not', null);
    else q = q.where('e.paid_at', 'is', null).where('e.due_at', is === 'due' ? '<=' : '>', now);
  }
  return pageQuery(q, 'e', page).execute();
}

export interface LedgerBalance {
  /** Sum of the entries in their hold. */
  pending: number;
  /** Past the hold, not paid (in a pending payout or not). */
  due: number;
  /** The part of `due` in no payout: what the next run pays (or, when negative, the balance carried). */
  dueOutsidePayouts: number;
  paid: number;
}

/** A program's ledger, or one affiliate's, in sums at `now` (minor units). */
export async function ledgerBalance(db: Db | Tx, programId: string, now: string, affiliateId?: string): Promise<LedgerBalance> {
  let q = db
    .selectFrom('commission_entries')
    .select([
      sql<number | string>`coalesce(sum(case when paid_at is null and due_at > ${now} then amount else 0 end), 0)`.as('pending'),
      sql<number | string>`coalesce(sum(case when paid_at is null and due_at <= ${now} then amount else 0 end), 0)`.as('due'),
      sql<number | string>`coalesce(sum(case when paid_at is null and due_at <= ${now} and payout_id is null then amount else 0 end), 0)`.as('open'),
      sql<number | string>`coalesce(sum(case when paid_at is not null then amount else 0 end), 0)`.as('paid'),
    ])
    .where('program_id', '=', programId);
  if (affiliateId !== undefined) q = q.where('affiliate_id', '=', affiliateId);
  const row = await q.executeTakeFirstOrThrow();
  return { pending: Number(row.pending), due: Number(row.due), dueOutsidePayouts: Number(row.open), paid: Number(row.paid) };
}

/** The far future a held entry waits until: never due while its sale is disputed. */
export const HELD_UNTIL = '9999-12-31T00:00:00.000Z';

/**
 * Holds a sale's unpaid commission entries: in no payout, and in a pending payout too — its
 * amount is frozen, so it still pays them if it is paid, but if it fails they return held, not
 * due (releaseEntries only takes them out of the payout). Returns how many moved; amounts never
 * change, only when they fall due.
 */
export async function holdSaleEntries(tx: Tx, programId: string, saleId: number): Promise<number> {
  const { numUpdatedRows } = await tx
    .updateTable('commission_entries')
    .set({ due_at: HELD_UNTIL })
    .where('program_id', '=', programId)
    .where('sale_id', '=', saleId)
    .where('paid_at', 'is', null)
    .executeTakeFirst();
  return Number(numUpdatedRows);
}

/** A sale's held entries fall due at `dueAt` (those a payout paid meanwhile too, so none keeps the far date); returns how many moved. */
export async function releaseSaleEntries(tx: Tx, programId: string, saleId: number, dueAt: string): Promise<number> {
  const { numUpdatedRows } = await tx
    .updateTable('commission_entries')
    .set({ due_at: dueAt })
    .where('program_id', '=', programId)
    .where('sale_id', '=', saleId)
    .where('due_at', '=', HELD_UNTIL)
    .executeTakeFirst();
  return Number(numUpdatedRows);
}
