import { recordEvent } from '../events/outbox.ts';
import { isCurrencyCode, toMinorUnits } from '../../domain/money.ts';
import { newId } from '../../domain/ids.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import { inTransaction, type Db } from '../../db/transaction.ts';
import { conflict, invalidField, notFound } from '../../domain/errors.ts';
import type { PageRequest } from '../../db/keyset.ts';
import type { ProgramContext } from '../programs/program.service.ts';
import { serializeCoupons } from '../promotional-codes/promotional-code.serializer.ts';
import type { Coupon } from '../promotional-codes/promotional-code.schema.ts';
import type { CouponRow } from '../promotional-codes/promotional-code.repository.ts';
import { findCoupon, insertCoupon, listCoupons, type CouponFilter } from './coupon.repository.ts';
import type { CreateCouponBody } from './coupon.schema.ts';

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

export async function createCoupon(db: Db, program: ProgramContext, body: CreateCouponBody): Promise<Coupon> {
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
      const created = (await serializeCoupons(tx, program, [row]))[0]!;
      await recordEvent(tx, program.id, 'coupon.created', created, now);
      return created;
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw conflict(`A coupon with externalId "${body.externalId}" already exists in this program.`);
    throw error;
  }
}

export async function getCoupon(db: Db, program: ProgramContext, filter: CouponFilter): Promise<Coupon> {
  const row = await findCoupon(db, program.id, filter);
  if (!row) throw notFound('Coupon');
  return (await serializeCoupons(db, program, [row]))[0]!;
}

export async function getCouponPage(db: Db, program: ProgramContext, filter: CouponFilter, page: PageRequest) {
  return listCoupons(db, program.id, filter, page);
}
