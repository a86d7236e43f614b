import { recordEvent } from '../events/outbox.ts';
import { isCurrencyCode, toMinorUnits } from '../../domain/money.ts';
import { newId } from '../../domain/ids.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import { inTransaction, type Db } from '../../db/transaction.ts';
import { ApiError, conflict, hasDependents, invalidField, notFound, type FieldError } from '../../domain/errors.ts';
import { pageOf, type Page, type PageRequest } from '../../db/keyset.ts';
import type { ProgramContext } from '../../domain/program-context.ts';
import { serializeCoupons, serializeNestedCoupon } from './promotional-code.serializer.ts';
import { COUPON_CODES_LIMIT, COUPON_PAGE_CODES, type Coupon } from './promotional-code.schema.ts';
import type { CouponRow } from './promotional-code.repository.ts';
import { deleteCouponRow, findCoupon, insertCoupon, listCoupons, lockCodesOfCoupon, updateCouponRow, type CouponFilter } from './coupon.repository.ts';
import type { CreateCouponBody, DeleteCouponTarget, UpdateCouponBody } from './coupon.schema.ts';

function validateCoupon(program: ProgramContext, body: CreateCouponBody) {
  const type = body.couponType as 'PERCENTAGE' | 'FLAT';
  let currency: string | null = null;
  let amountOff: number | null = null;
  if (type === 'PERCENTAGE') {
    if (body.percentOff === undefined) throw invalidField('#/percentOff', 'is required for a PERCENTAGE coupon');
    if (body.amountOff !== undefined) throw invalidField('#/amountOff', 'is only for FLAT coupons');
  } else {
    if (body.amountOff === undefined) throw invalidField('#/amountOff', 'is required for a FLAT coupon');
    if (body.percentOff !== undefined) throw invalidField('#/percentOff', 'is only for PERCENTAGE coupons');
    currency = (body.currency ?? program.currency).toUpperCase();
    if (!isCurrencyCode(currency)) throw invalidField('#/currency', 'must be an ISO 4217 currency code');
    amountOff = toMinorUnits(body.amountOff, currency, '#/amountOff');
  }
  const duration = (body.duration ?? 'once') as 'once' | 'forever' | 'repeating';
  if (duration === 'repeating' && body.durationInMonths === undefined) throw invalidField('#/durationInMonths', 'is required when duration is repeating');
  if (duration !== 'repeating' && body.durationInMonths !== undefined) throw invalidField('#/durationInMonths', 'is only for repeating coupons');
  const productIds = body.productIds ?? [];
  if (body.limitToProducts && productIds.length === 0) throw invalidField('#/productIds', 'must list at least one product when limitToProducts is true');
  return { type, currency, amountOff, duration, productIds };
}

export async function createCoupon(db: Db, program: ProgramContext, body: CreateCouponBody, siteUrl: string): Promise<Coupon> {
  const { type, currency, amountOff, duration, productIds } = validateCoupon(program, body);
  const now = program.clock().toISOString();
  const row: CouponRow = {
    id: newId(),
    program_id: program.id,
    name: body.name.trim(),
    external_id: body.externalId ?? null,
    coupon_type: type,
    percent_off: body.percentOff ?? null,
    amount_off: amountOff,
    currency,
    duration,
    duration_in_months: body.durationInMonths ?? null,
    max_redemptions: body.maxRedemptions ?? null,
    times_redeemed: 0,
    limit_to_products: body.limitToProducts ? 1 : 0,
    product_ids: JSON.stringify(productIds),
    valid: body.valid === false ? 0 : 1,
    redeem_by: body.redeemBy === undefined ? null : new Date(body.redeemBy).toISOString(),
    integration_type: body.integrationType ?? null,
    created_at: now,
    updated_at: now,
  };
  try {
    return await inTransaction(db, async (tx) => {
      await insertCoupon(tx, row);
      const created = (await serializeCoupons(tx, program, [row], siteUrl))[0]!;
      await recordEvent(tx, program.id, 'coupon.created', created, now);
      return created;
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw conflict(`A coupon with externalId "${body.externalId}" already exists in this program.`);
    throw error;
  }
}

/** How many codes coupons carry: each its `perCoupon` newest, and a page of coupons `perPage` in all. */
export interface CouponCodeBounds {
  perCoupon: number;
  perPage: number;
}

/** The API's: every coupon response carries its 100 newest codes, a list page 1,000 in all. */
export const API_CODE_BOUNDS: CouponCodeBounds = { perCoupon: COUPON_CODES_LIMIT, perPage: COUPON_PAGE_CODES };

/** A coupon with its `bounds.perCoupon` newest codes, the count of all and the URL of their list (serializeCoupons). */
export async function getCoupon(db: Db, program: ProgramContext, filter: CouponFilter, siteUrl: string, bounds: CouponCodeBounds = API_CODE_BOUNDS): Promise<Coupon> {
  const row = await findCoupon(db, program.id, filter);
  if (!row) throw notFound('Coupon');
  return (await serializeCoupons(db, program, [row], siteUrl, bounds.perCoupon))[0]!;
}

/** A coupon as lists hold it: the API's Coupon, and how many times its codes were redeemed (the dashboard shows it; the API's answer leaves it out). */
export type ListedCoupon = Coupon & { timesRedeemed: number };

/**
 * The coupons of a page: at most `page.limit`, and as many as their nested codes (each
 * coupon's, up to `perCoupon`) fit in `perPage`. The page ends before the coupon that would pass
 * it, with `next` after the last one kept, so following the pages gives every coupon once; it
 * always holds one coupon (one coupon's codes never pass the budget: perCoupon ≤ perPage).
 */
function withinCodeBudget<R extends CouponRow & { nested_codes: number | string | null }>(rows: R[], page: PageRequest, bounds: CouponCodeBounds): Page<R> {
  let kept = 0;
  let codes = 0;
  for (const row of rows.slice(0, page.limit)) {
    const nested = Math.min(Number(row.nested_codes ?? 0), bounds.perCoupon);
    if (kept > 0 && codes + nested > bounds.perPage) break;
    codes += nested;
    kept++;
  }
  // One row past the page's end tells that more follow (and where the next page starts).
  return pageOf(rows.slice(0, kept + 1), { ...page, limit: kept });
}

/**
 * A page of coupons, each with its newest codes, the count of all and the URL of their list
 * (serializeCoupons), bounded in rows (`page.limit`) and in nested codes (`bounds.perPage`).
 */
export async function getCouponPage(
  db: Db,
  program: ProgramContext,
  filter: CouponFilter,
  page: PageRequest,
  siteUrl: string,
  bounds: CouponCodeBounds = API_CODE_BOUNDS,
): Promise<Page<ListedCoupon>> {
  const rows = withinCodeBudget(await listCoupons(db, program.id, filter, page, bounds.perCoupon), page, bounds);
  const coupons = await serializeCoupons(db, program, rows.items, siteUrl, bounds.perCoupon);
  return { ...rows, items: coupons.map((coupon, i) => ({ ...coupon, timesRedeemed: Number(rows.items[i]!.times_redeemed) })) };
}

const DISCOUNT_TERMS = ['couponType', 'percentOff', 'amountOff', 'currency', 'duration', 'durationInMonths'] as const;

export async function updateCoupon(db: Db, program: ProgramContext, id: string, body: UpdateCouponBody, siteUrl: string): Promise<Coupon> {
  try {
    return await inTransaction(db, async (tx) => {
      const current = await findCoupon(tx, program.id, { id });
      if (!current) throw notFound('Coupon');
      // Codes already handed out promise this discount: a different one is a new coupon.
      const stored = serializeNestedCoupon(current, program.clock().getTime());
      const changed: FieldError[] = [];
      for (const field of DISCOUNT_TERMS) {
        const sent = body[field];
        if (sent === undefined) continue;
        const same = field === 'currency' && typeof sent === 'string' ? sent.toUpperCase() === stored.currency : sent === stored[field];
        if (!same) changed.push({ pointer: `#/${field}`, detail: 'cannot be changed: the discount terms of a coupon are fixed; create a new coupon instead' });
      }
      if (changed.length > 0) throw new ApiError('validation_failed', 'The discount terms of a coupon cannot be changed.', changed);

      const now = program.clock().toISOString();
      const next: CouponRow = { ...current, updated_at: now };
      if (body.name !== undefined) next.name = body.name.trim();
      if (body.externalId !== undefined) next.external_id = body.externalId;
      if (body.valid !== undefined) next.valid = body.valid ? 1 : 0;
      if (body.redeemBy !== undefined) next.redeem_by = body.redeemBy === null ? null : new Date(body.redeemBy).toISOString();
      if (body.maxRedemptions !== undefined) next.max_redemptions = body.maxRedemptions;
      if (body.limitToProducts !== undefined) next.limit_to_products = body.limitToProducts ? 1 : 0;
      if (body.productIds !== undefined) next.product_ids = JSON.stringify(body.productIds);
      if (body.integrationType !== undefined) next.integration_type = body.integrationType;
      if (next.limit_to_products && (JSON.parse(next.product_ids) as string[]).length === 0) {
        throw invalidField('#/productIds', 'must list at least one product when limitToProducts is true');
      }
      const { id: _id, program_id: _p, times_redeemed: _t, created_at: _c, ...changes } = next;
      await updateCouponRow(tx, program.id, id, changes);
      const updated = (await serializeCoupons(tx, program, [next], siteUrl))[0]!;
      await recordEvent(tx, program.id, 'coupon.updated', updated, now);
      return updated;
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw conflict(`A coupon with externalId "${body.externalId}" already exists in this program.`);
    throw error;
  }
}

/**
 * Deletes a coupon with its promotional codes (FK CASCADE; one coupon.deleted event, none per
 * code). A redeemed code makes it a 409 has_dependents unless `force`; then the referrals and
 * sales that used the codes stay, without a code (FK SET NULL). Answers the coupon as it was.
 */
export async function deleteCoupon(db: Db, program: ProgramContext, id: string, target: Pick<DeleteCouponTarget, 'force'>, siteUrl: string): Promise<Coupon> {
  return inTransaction(db, async (tx) => {
    const codes = await lockCodesOfCoupon(tx, program.id, id);
    const current = await findCoupon(tx, program.id, { id });
    if (!current) throw notFound('Coupon');
    const redeemed = codes.filter((code) => Number(code.times_redeemed) > 0).length;
    if (!target.force && redeemed > 0) {
      throw hasDependents(`${redeemed} of the coupon's promotional codes have been redeemed; deleting them leaves their referrals and sales without a code.`);
    }
    const deleted = (await serializeCoupons(tx, program, [current], siteUrl))[0]!;
    await deleteCouponRow(tx, program.id, id);
    await recordEvent(tx, program.id, 'coupon.deleted', deleted, program.clock().toISOString());
    return deleted;
  });
}
