import { Type, type Static } from '@sinclair/typebox';
import { DateTime, ListQuery, Money, Nullable, ShortText, Uuid } from '../../http/schemas.ts';
import { deleteTargetSchema } from '../../http/request-target.ts';

/** Redemption limits are stored as 64-bit integers and read as JS numbers: keep them exact. */
export const MAX_REDEMPTIONS = Number.MAX_SAFE_INTEGER;

export const CouponFields = {
  id: Uuid,
  name: Type.String(),
  externalId: Nullable(Type.String()),
  couponType: Type.String({ enum: ['PERCENTAGE', 'FLAT'] }),
  percentOff: Nullable(Type.Number()),
  amountOff: Nullable(Type.Number()),
  currency: Nullable(Type.String()),
  duration: Type.String({ enum: ['once', 'forever', 'repeating'] }),
  durationInMonths: Nullable(Type.Integer()),
  maxRedemptions: Nullable(Type.Integer()),
  limitToProducts: Type.Boolean(),
  productIds: Type.Array(Type.String()),
  valid: Type.Boolean({ description: 'stored flag, and not past redeemBy, and maxRedemptions not reached' }),
  redeemBy: Nullable(Type.String({ format: 'date-time' })),
  integrationType: Nullable(Type.String()),
  affiliateProgramId: Uuid,
  createdAt: DateTime,
  updatedAt: DateTime,
};

/** A coupon as nested in a promotional code: every field but the list of codes (no cycle). */
export const NestedCouponSchema = Type.Object(CouponFields, { title: 'CouponWithoutCodes' });
export type NestedCoupon = Static<typeof NestedCouponSchema>;

export const CreateCouponBody = Type.Object({
  name: ShortText,
  externalId: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  couponType: Type.String({ enum: ['PERCENTAGE', 'FLAT'] }),
  percentOff: Type.Optional(Type.Number({ minimum: 1, maximum: 100 })),
  amountOff: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: Money.maximum })),
  currency: Type.Optional(Type.String({ pattern: '^[A-Za-z]{3}$' })),
  duration: Type.Optional(Type.String({ enum: ['once', 'forever', 'repeating'] })),
  durationInMonths: Type.Optional(Type.Integer({ minimum: 1, maximum: 120 })),
  maxRedemptions: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_REDEMPTIONS })),
  limitToProducts: Type.Optional(Type.Boolean()),
  productIds: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 200 }), { maxItems: 500 })),
  valid: Type.Optional(Type.Boolean()),
  redeemBy: Type.Optional(Type.String({ format: 'date-time' })),
  integrationType: Type.Optional(Type.String({ minLength: 1, maxLength: 50 })),
});
export type CreateCouponBody = Static<typeof CreateCouponBody>;

export const CouponsQuery = Type.Object({
  id: Type.Optional(Uuid),
  externalId: Type.Optional(Type.String({ maxLength: 200 })),
  name: Type.Optional(Type.String({ maxLength: 200 })),
  ...ListQuery,
});
export type CouponsQuery = Static<typeof CouponsQuery>;

/**
 * PUT /coupons. The discount terms (couponType … durationInMonths) are accepted only with the
 * coupon's current value: codes already handed out promise that discount.
 */
export const UpdateCouponBody = Type.Object({
  id: Type.Optional(Uuid),
  couponId: Type.Optional(Uuid),
  name: Type.Optional(ShortText),
  externalId: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 200 }))),
  valid: Type.Optional(Type.Boolean()),
  redeemBy: Type.Optional(Nullable(Type.String({ format: 'date-time' }))),
  maxRedemptions: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: MAX_REDEMPTIONS }))),
  limitToProducts: Type.Optional(Type.Boolean()),
  productIds: CreateCouponBody.properties.productIds,
  integrationType: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 50 }))),
  couponType: Type.Optional(Type.String({ maxLength: 20, description: 'cannot change; accepted when equal to the current value' })),
  percentOff: Type.Optional(Nullable(Type.Number({ description: 'cannot change; accepted when equal to the current value' }))),
  amountOff: Type.Optional(Nullable(Type.Number({ description: 'cannot change; accepted when equal to the current value' }))),
  currency: Type.Optional(Nullable(Type.String({ maxLength: 3, description: 'cannot change; accepted when equal to the current value' }))),
  duration: Type.Optional(Type.String({ maxLength: 20, description: 'cannot change; accepted when equal to the current value' })),
  durationInMonths: Type.Optional(Nullable(Type.Integer({ description: 'cannot change; accepted when equal to the current value' }))),
});
export type UpdateCouponBody = Static<typeof UpdateCouponBody>;

/** PUT /coupons names the coupon by `id` (or `couponId`) in the body or the query. */
export const UpdateCouponTarget = Type.Object({ id: Type.Optional(Uuid), couponId: Type.Optional(Uuid) });

/** DELETE /coupons names the coupon by `id` (or `couponId`), in the query or a JSON body. */
export const DeleteCouponTarget = deleteTargetSchema({
  id: Type.Optional(Uuid),
  couponId: Type.Optional(Uuid),
});
export type DeleteCouponTarget = Static<typeof DeleteCouponTarget>;
