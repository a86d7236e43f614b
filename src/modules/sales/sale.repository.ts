import type { Insertable, Selectable } from 'kysely';
import type { SalesTable } from '../../db/schema.ts';
import type { Db, Tx } from '../../db/transaction.ts';
import { pageQuery, type PageRequest } from '../../http/pagination.ts';

export type SaleRow = Selectable<SalesTable>;

export interface SaleFilter {
  id?: number;
  affiliateId?: string;
  referralId?: string;
}

function selectSales(db: Db | Tx, programId: string, filter: SaleFilter) {
  let q = db.selectFrom('sales as s').selectAll('s').where('s.program_id', '=', programId);
  if (filter.id !== undefined) q = q.where('s.id', '=', filter.id);
  if (filter.affiliateId !== undefined) q = q.where('s.affiliate_id', '=', filter.affiliateId);
  if (filter.referralId !== undefined) q = q.where('s.referral_id', '=', filter.referralId);
  return q;
}

export function findSale(db: Db | Tx, programId: string, filter: SaleFilter) {
  return selectSales(db, programId, filter).executeTakeFirst();
}

export function listSales(db: Db, programId: string, filter: SaleFilter, page: PageRequest) {
  return pageQuery(selectSales(db, programId, filter), 's', page).execute();
}

export async function insertSale(tx: Tx, row: Insertable<SalesTable>): Promise<number> {
  const { id } = await tx.insertInto('sales').values(row).returning('id').executeTakeFirstOrThrow();
  return Number(id);
}

export async function customerHasSale(tx: Tx, referralId: string): Promise<boolean> {
  const row = await tx.selectFrom('sales').select('id').where('referral_id', '=', referralId).limit(1).executeTakeFirst();
  return row !== undefined;
}
