import type { Selectable } from 'kysely';
import type { CouponsTable, PromotionalCodesTable } from '../../db/schema.ts';
import type { Db, Tx } from '../../db/transaction.ts';
import { pageQuery, type PageRequest } from '../../db/keyset.ts';

export type CodeRow = Selectable<PromotionalCodesTable>;
export type CouponRow = Selectable<CouponsTable>;
export interface CodeAffiliateRow {
  id: string;
  first_name: string;
  last_name: string;
  email: string;
}

export function codeKey(code: string): string {
  return code.toLowerCase();
}

export interface CodeFilter {
  id?: string;
  code?: string;
  externalId?: string;
  couponId?: string;
  affiliateId?: string;
}

function selectCodes(db: Db | Tx, programId: string, filter: CodeFilter) {
  let q = db.selectFrom('promotional_codes as pc').selectAll('pc').where('pc.program_id', '=', programId);
  if (filter.id !== undefined) q = q.where('pc.id', '=', filter.id);
  if (filter.code !== undefined) q = q.where('pc.code_key', '=', codeKey(filter.code));
  if (filter.externalId !== undefined) q = q.where('pc.external_id', '=', filter.externalId);
  if (filter.couponId !== undefined) q = q.where('pc.coupon_id', '=', filter.couponId);
  if (filter.affiliateId !== undefined) q = q.where('pc.affiliate_id', '=', filter.affiliateId);
  return q;
}

export function findCode(db: Db | Tx, programId: string, filter: CodeFilter) {
  return selectCodes(db, programId, filter).executeTakeFirst();
}

export function listCodes(db: Db, programId: string, filter: CodeFilter, page: PageRequest) {
  return pageQuery(selectCodes(db, programId, filter), 'pc', page).execute();
}

export function listCodesOfCoupons(db: Db | Tx, programId: string, couponIds: string[]) {
  if (couponIds.length === 0) return Promise.resolve([]);
  return db
    .selectFrom('promotional_codes')
    .selectAll()
    .where('program_id', '=', programId)
    .where('coupon_id', 'in', couponIds)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
}

export function findCouponsByIds(db: Db | Tx, programId: string, ids: string[]) {
  if (ids.length === 0) return Promise.resolve([]);
  return db.selectFrom('coupons').selectAll().where('program_id', '=', programId).where('id', 'in', ids).execute();
}

export function findCodeAffiliates(db: Db | Tx, programId: string, ids: string[]): Promise<CodeAffiliateRow[]> {
  if (ids.length === 0) return Promise.resolve([]);
  return db
    .selectFrom('affiliates')
    .select(['id', 'first_name', 'last_name', 'email'])
    .where('program_id', '=', programId)
    .where('id', 'in', ids)
    .execute();
}

export async function insertCode(tx: Tx, row: CodeRow): Promise<void> {
  await tx.insertInto('promotional_codes').values(row).execute();
}

export async function updateCode(tx: Tx, id: string, changes: Partial<Omit<CodeRow, 'id' | 'program_id' | 'coupon_id'>>): Promise<void> {
  await tx.updateTable('promotional_codes').set(changes).where('id', '=', id).execute();
}

/**
 * The atomic step of redemption: increments only while below the limit, in one statement,
 * so concurrent requests (in any number of processes) can never exceed it.
 * Returns false when the limit was already reached.
 */
export async function incrementCodeRedemptions(tx: Tx, codeId: string): Promise<boolean> {
  const result = await tx
    .updateTable('promotional_codes')
    .set((eb) => ({ times_redeemed: eb('times_redeemed', '+', 1) }))
    .where('id', '=', codeId)
    .where((eb) => eb.or([eb('max_redemptions', 'is', null), eb('times_redeemed', '<', eb.ref('max_redemptions'))]))
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** The same atomic step for the coupon-wide limit shared by all of its codes. */
export async function incrementCouponRedemptions(tx: Tx, couponId: string): Promise<boolean> {
  const result = await tx
    .updateTable('coupons')
    .set((eb) => ({ times_redeemed: eb('times_redeemed', '+', 1) }))
    .where('id', '=', couponId)
    .where((eb) => eb.or([eb('max_redemptions', 'is', null), eb('times_redeemed', '<', eb.ref('max_redemptions'))]))
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}
