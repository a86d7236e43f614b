import { toIso } from '../../domain/clock.ts';
import type { Tx } from '../../db/transaction.ts';
import { ApiError, notFound, type ErrorCode } from '../../domain/errors.ts';
import { recordEvent } from '../events/outbox.ts';
import type { ProgramContext } from '../../domain/program-context.ts';
import { findCodeWithRelations, incrementCodeRedemptions, incrementCouponRedemptions, type CodeWithRelations } from './promotional-code.repository.ts';
import { serializeCodeWithRelations } from './promotional-code.serializer.ts';

// The redemption rules of CONTRACT.md. Every check that reads state runs first and names its
// reason; the limits are then enforced again by the atomic conditional increments, so two
// racing requests can never both take the last redemption.

export type RedeemableCode = CodeWithRelations;

export interface RedemptionAttempt {
  /** The affiliate the referral or sale is credited to. */
  affiliateId: string;
  /** The customer's external id (referredUserExternalId), for limitToCustomers. */
  customerExternalId: string;
  /** True when the customer already has a sale, for firstTimeOrder. */
  customerHasOrdered: boolean;
  /** The sale amount in minor units; undefined for referrals. */
  totalEarnedMinor?: number;
}

function reject(code: ErrorCode, detail: string): ApiError {
  return new ApiError(code, detail);
}

export async function findRedeemableCode(tx: Tx, program: ProgramContext, code: string): Promise<RedeemableCode> {
  const found = await findCodeWithRelations(tx, program.id, { code });
  if (!found) throw notFound(`Promotional code "${code}"`);
  // The rules about the code and its coupon come first (docs/api.md), before the caller
  // looks for an affiliate to credit through the code.
  checkCodeUsable(found, program.clock().getTime());
  return found;
}

/** Throws the first rule about the code and its coupon alone that fails, naming it. */
export function checkCodeUsable({ code, coupon }: RedeemableCode, now: number): void {
  if (!code.active) throw reject('promo_code_inactive', `The promotional code "${code.code}" is inactive.`);
  if (code.expires_at !== null && Date.parse(toIso(code.expires_at)) <= now) throw reject('promo_code_expired', `The promotional code "${code.code}" has expired.`);
  if (code.max_redemptions !== null && Number(code.times_redeemed) >= Number(code.max_redemptions)) {
    throw reject('promo_code_exhausted', `The promotional code "${code.code}" has reached its ${code.max_redemptions} redemptions.`);
  }
  if (!coupon.valid) throw reject('coupon_invalid', `The coupon of "${code.code}" is not valid.`);
  if (coupon.redeem_by !== null && Date.parse(toIso(coupon.redeem_by)) <= now) throw reject('coupon_invalid', `The coupon of "${code.code}" can no longer be redeemed.`);
  if (coupon.max_redemptions !== null && Number(coupon.times_redeemed) >= Number(coupon.max_redemptions)) {
    throw reject('coupon_invalid', `The coupon of "${code.code}" has reached its redemption limit.`);
  }
}

/** Throws the first rule the attempt breaks, naming it, in the order docs/api.md lists them. */
export function checkRedemption(found: RedeemableCode, attempt: RedemptionAttempt, now: number): void {
  checkCodeUsable(found, now);
  const { code } = found;
  if (attempt.totalEarnedMinor !== undefined && code.minimum_amount !== null && attempt.totalEarnedMinor < Number(code.minimum_amount)) {
    throw reject('promo_code_minimum_amount', `The promotional code "${code.code}" needs a purchase of at least its minimum amount.`);
  }
  if (code.first_time_order && attempt.customerHasOrdered) {
    throw reject('promo_code_first_time_only', `The promotional code "${code.code}" is for first orders only.`);
  }
  if (code.limit_to_customers && code.customer_id !== attempt.customerExternalId) {
    throw reject('promo_code_customer_restricted', `The promotional code "${code.code}" is limited to another customer.`);
  }
  if (code.affiliate_id === null) throw reject('promo_code_not_assigned', `The promotional code "${code.code}" is not assigned to an affiliate, so nobody can be credited.`);
  if (code.limit_to_affiliate && code.affiliate_id !== attempt.affiliateId) {
    throw reject('promo_code_not_assigned', `The promotional code "${code.code}" can only be used for its own affiliate.`);
  }
}

/** Checks and redeems inside the caller's transaction; records promotional_code.redeemed. */
export async function redeemPromoCode(tx: Tx, program: ProgramContext, found: RedeemableCode, attempt: RedemptionAttempt): Promise<void> {
  const now = program.clock();
  checkRedemption(found, attempt, now.getTime());
  const { code, coupon } = found;
  const codeCount = await incrementCodeRedemptions(tx, code.id);
  if (!codeCount) throw reject('promo_code_exhausted', `The promotional code "${code.code}" has reached its ${code.max_redemptions} redemptions.`);
  const couponCount = await incrementCouponRedemptions(tx, coupon.id);
  if (!couponCount) throw reject('coupon_invalid', `The coupon of "${code.code}" has reached its redemption limit.`);
  // The counts the increments returned: concurrent redemptions may have moved them past our +1.
  const redeemed = { ...found, code: { ...code, ...codeCount }, coupon: { ...coupon, ...couponCount } };
  await recordEvent(tx, program.id, 'promotional_code.redeemed', serializeCodeWithRelations(redeemed, program), now.toISOString());
}
