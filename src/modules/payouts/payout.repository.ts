import { sql, type Selectable } from 'kysely';
import type { PayoutsTable } from '../../db/schema.ts';
import type { Db, Tx } from '../../db/transaction.ts';
import { lockedOnPostgres } from '../../db/dialect.ts';
import { pageQuery, type PageRequest } from '../../db/keyset.ts';

export type PayoutRow = Selectable<PayoutsTable>;

/**
 * Holds the program's row until the transaction ends: payout runs of one program take turns
 * (SQLite transactions are serial already), so no entry can go into two payouts.
 */
export async function lockProgramForPayouts(tx: Tx, programId: string): Promise<void> {
  await lockedOnPostgres(tx, tx.selectFrom('programs').select('id').where('id', '=', programId)).execute();
}

/** Affiliates (that still exist) whose open due entries add up to at least `minimum` and more than 0. */
export async function affiliatesOwed(tx: Tx, programId: string, now: string, minimum: number, affiliateId?: string): Promise<string[]> {
  let q = tx
    .selectFrom('commission_entries as e')
    .innerJoin('affiliates as a', 'a.id', 'e.affiliate_id')
    .select('e.affiliate_id')
    .where('e.program_id', '=', programId)
    .where('e.payout_id', 'is', null)
    .where('e.paid_at', 'is', null)
    .where('e.due_at', '<=', now);
  if (affiliateId !== undefined) q = q.where('e.affiliate_id', '=', affiliateId);
  const rows = await q
    .groupBy('e.affiliate_id')
    .having(sql<number>`sum(e.amount)`, '>', 0)
    .having(sql<number>`sum(e.amount)`, '>=', minimum)
    .orderBy('e.affiliate_id')
    .execute();
  return rows.map((row) => row.affiliate_id);
}

/** The affiliate's open due entries, locked: what a payout made now holds. */
export async function lockOpenDueEntries(tx: Tx, programId: string, affiliateId: string, now: string): Promise<{ id: number; amount: number }[]> {
  const q = tx
    .selectFrom('commission_entries')
    .select(['id', 'amount'])
    .where('program_id', '=', programId)
    .where('affiliate_id', '=', affiliateId)
    .where('payout_id', 'is', null)
    .where('paid_at', 'is', null)
    .where('due_at', '<=', now);
  const rows = await lockedOnPostgres(tx, q).execute();
  return rows.map((row) => ({ id: Number(row.id), amount: Number(row.amount) }));
}

export async function insertPayout(tx: Tx, row: PayoutRow): Promise<void> {
  await tx.insertInto('payouts').values(row).execute();
}

const ID_BATCH = 1000;

export async function assignEntries(tx: Tx, programId: string, payoutId: string, entryIds: number[]): Promise<void> {
  for (let i = 0; i < entryIds.length; i += ID_BATCH) {
    await tx
      .updateTable('commission_entries')
      .set({ payout_id: payoutId })
      .where('program_id', '=', programId)
      .where('id', 'in', entryIds.slice(i, i + ID_BATCH))
      .execute();
  }
}

export interface PayoutFilter {
  id?: string;
  affiliateId?: string;
  status?: PayoutRow['status'];
}

function selectPayouts(db: Db | Tx, programId: string, filter: PayoutFilter) {
  let q = db.selectFrom('payouts as p').selectAll('p').where('p.program_id', '=', programId);
  if (filter.id !== undefined) q = q.where('p.id', '=', filter.id);
  if (filter.affiliateId !== undefined) q = q.where('p.affiliate_id', '=', filter.affiliateId);
  if (filter.status !== undefined) q = q.where('p.status', '=', filter.status);
  return q;
}

export function listPayouts(db: Db, programId: string, filter: PayoutFilter, page: PageRequest): Promise<PayoutRow[]> {
  return pageQuery(selectPayouts(db, programId, filter), 'p', page).execute();
}

/** Reads a payout and holds its row until the transaction ends. */
export function lockPayout(tx: Tx, programId: string, id: string): Promise<PayoutRow | undefined> {
  return lockedOnPostgres(tx, selectPayouts(tx, programId, {}).where('p.id', '=', id)).executeTakeFirst();
}

export async function settlePayout(tx: Tx, programId: string, id: string, changes: Pick<PayoutRow, 'status' | 'paid_at' | 'method' | 'reference' | 'updated_at'>): Promise<void> {
  await tx.updateTable('payouts').set(changes).where('program_id', '=', programId).where('id', '=', id).execute();
}

/** A paid payout's entries are paid at its time. */
export async function markEntriesPaid(tx: Tx, programId: string, payoutId: string, paidAt: string): Promise<void> {
  await tx.updateTable('commission_entries').set({ paid_at: paidAt }).where('program_id', '=', programId).where('payout_id', '=', payoutId).execute();
}

/** A failed payout's entries are due again, outside any payout. */
export async function releaseEntries(tx: Tx, programId: string, payoutId: string): Promise<void> {
  await tx.updateTable('commission_entries').set({ payout_id: null }).where('program_id', '=', programId).where('payout_id', '=', payoutId).execute();
}
