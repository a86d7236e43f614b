import { sql, type Selectable } from 'kysely';
import type { PayoutsTable } from '../../db/schema.ts';
import type { Db, Tx } from '../../db/transaction.ts';
import { dialectOf, lockedOnPostgres } from '../../db/dialect.ts';
import { pageQuery, type PageRequest } from '../../db/keyset.ts';

export type PayoutRow = Selectable<PayoutsTable>;

/**
 * Holds the program's row until the transaction ends: payout runs of one program take turns
 * (SQLite transactions are serial already), so no entry can go into two payouts. FOR NO KEY
 * UPDATE, not FOR UPDATE: a row inserted meanwhile that refers to the program (a sale, an
 * event) takes a key-share lock on it, which this lock lets through.
 */
export async function lockProgramForPayouts(tx: Tx, programId: string): Promise<void> {
  const q = tx.selectFrom('programs').select('id').where('id', '=', programId);
  await (dialectOf(tx) === 'postgres' ? q.forNoKeyUpdate() : q).execute();
}

/** Affiliates (that still exist) whose open due entries add up to at least `minimum` and more than 0. */
export async function affiliatesOwed(db: Db | Tx, programId: string, now: string, minimum: number, affiliateId?: string): Promise<string[]> {
  let q = db
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

/** The open due entries of a batch of affiliates, locked: what payouts made now hold. */
export async function lockOpenDueEntries(tx: Tx, programId: string, affiliateIds: string[], now: string): Promise<OpenEntry[]> {
  const q = tx
    .selectFrom('commission_entries')
    .select(['id', 'affiliate_id', 'amount'])
    .where('program_id', '=', programId)
    .where('affiliate_id', 'in', affiliateIds)
    .where('payout_id', 'is', null)
    .where('paid_at', 'is', null)
    .where('due_at', '<=', now)
    .orderBy('id');
  const rows = await lockedOnPostgres(tx, q).execute();
  return rows.map((row) => ({ id: Number(row.id), affiliateId: row.affiliate_id, amount: Number(row.amount) }));
}

export interface OpenEntry {
  id: number;
  affiliateId: string;
  amount: number;
}

const ROW_BATCH = 500;

export async function insertPayouts(tx: Tx, rows: PayoutRow[]): Promise<void> {
  for (let i = 0; i < rows.length; i += ROW_BATCH) await tx.insertInto('payouts').values(rows.slice(i, i + ROW_BATCH)).execute();
}

const ID_BATCH = 1000;

/**
 * Puts entries into their affiliate's new payout (`payoutOf`: affiliate id → payout id),
 * addressed by their keys alone: the ids were read, program-scoped and locked, by
 * lockOpenDueEntries in this transaction. (With `program_id` in the condition too, SQLite
 * planned the update on the program's index and visited every entry of the program for each
 * payout: a run over 2,000 affiliates took 27 s.)
 */
export async function assignEntries(tx: Tx, payoutOf: Map<string, string>, entries: OpenEntry[]): Promise<void> {
  const postgres = dialectOf(tx) === 'postgres';
  for (let i = 0; i < entries.length; i += ID_BATCH) {
    const chunk = entries.slice(i, i + ID_BATCH);
    const affiliates = [...new Set(chunk.map((entry) => entry.affiliateId))];
    const uuid = (value: string) => (postgres ? sql`cast(${value} as uuid)` : sql`${value}`);
    const payoutId = sql<string>`case ${sql.join(affiliates.map((id) => sql`when affiliate_id = ${id} then ${uuid(payoutOf.get(id)!)}`), sql` `)} end`;
    await tx
      .updateTable('commission_entries')
      .set({ payout_id: payoutId })
      .where(
        'id',
        'in',
        chunk.map((entry) => entry.id),
      )
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
