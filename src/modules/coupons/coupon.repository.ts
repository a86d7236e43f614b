import type { Db, Tx } from '../../db/transaction.ts';
import { pageQuery, type PageRequest } from '../../db/keyset.ts';
import type { CouponRow } from '../promotional-codes/promotional-code.repository.ts';

export interface CouponFilter {
  id?: string;
  externalId?: string;
  name?: string;
}

function selectCoupons(db: Db | Tx, programId: string, filter: CouponFilter) {
  let q = db.selectFrom('coupons as c').selectAll('c').where('c.program_id', '=', programId);
  if (filter.id !== undefined) q = q.where('c.id', '=', filter.id);
  if (filter.externalId !== undefined) q = q.where('c.external_id', '=', filter.externalId);
  if (filter.name !== undefined) q = q.where('c.name', '=', filter.name);
  return q;
}

export function findCoupon(db: Db | Tx, programId: string, filter: CouponFilter) {
  return selectCoupons(db, programId, filter).executeTakeFirst();
}

export function listCoupons(db: Db, programId: string, filter: CouponFilter, page: PageRequest) {
  return pageQuery(selectCoupons(db, programId, filter), 'c', page).execute();
}

export async function insertCoupon(tx: Tx, row: CouponRow): Promise<void> {
  await tx.insertInto('coupons').values(row).execute();
}
