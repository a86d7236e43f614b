import { sql, type Updateable } from 'kysely';
import type { CouponsTable } from '../../db/schema.ts';
import type { Db, Tx } from '../../db/transaction.ts';
import { pageQuery, type PageRequest } from '../../db/keyset.ts';
import { lockedOnPostgres } from '../../db/dialect.ts';
import type { CouponRow } from './promotional-code.repository.ts';

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

/**
 * A page of coupons (`page.limit` + 1 rows, newest first), each with `nested_codes`: how many
 * codes it has, counted up to `codesPerCoupon` (the most a coupon answers with), which is what
 * a page's budget of nested codes needs. Each count stops after `codesPerCoupon` entries of the
 * promotional_codes_coupon index, so a coupon with a million codes costs what one with a
 * hundred does.
 */
export function listCoupons(db: Db, programId: string, filter: CouponFilter, page: PageRequest, codesPerCoupon: number) {
  const q = selectCoupons(db, programId, filter).select((eb) =>
    eb
      .selectFrom(
        eb
          .selectFrom('promotional_codes as pc')
          .select(sql<number>`1`.as('one'))
          .whereRef('pc.coupon_id', '=', 'c.id')
          .limit(codesPerCoupon)
          .as('capped'),
      )
      .select(eb.fn.countAll<number | string>().as('n'))
      .as('nested_codes'),
  );
  return pageQuery(q, 'c', page).execute();
}

export async function insertCoupon(tx: Tx, row: CouponRow): Promise<void> {
  await tx.insertInto('coupons').values(row).execute();
}

export async function updateCouponRow(tx: Tx, programId: string, id: string, changes: Updateable<CouponsTable>): Promise<void> {
  await tx.updateTable('coupons').set(changes).where('program_id', '=', programId).where('id', '=', id).execute();
}

/** Deletes a coupon; its promotional codes go with it (FK CASCADE). */
export async function deleteCouponRow(tx: Tx, programId: string, id: string): Promise<void> {
  await tx.deleteFrom('coupons').where('program_id', '=', programId).where('id', '=', id).execute();
}

/**
 * The redemption counts of a coupon's codes, each row locked until the transaction ends
 * (PostgreSQL; SQLite has one writer at a time). A redemption locks its code before the
 * coupon, so taking the codes first sees every redemption that commits before the delete
 * and cannot deadlock with one.
 */
export function lockCodesOfCoupon(tx: Tx, programId: string, couponId: string) {
  const q = tx
    .selectFrom('promotional_codes')
    .select(['id', 'times_redeemed'])
    .where('program_id', '=', programId)
    .where('coupon_id', '=', couponId)
    .orderBy('id');
  return lockedOnPostgres(tx, q).execute();
}
