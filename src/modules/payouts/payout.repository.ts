import type { Selectable } from 'kysely';
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

const ROW_BATCH = 500;

export async function insertPayouts(tx: Tx, rows: PayoutRow[]): Promise<void> {
  for (let i = 0; i < rows.length; i += ROW_BATCH) await tx.insertInto('payouts').values(rows.slice(i, i + ROW_BATCH)).execute();
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
