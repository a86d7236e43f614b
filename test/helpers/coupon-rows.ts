import { randomUUID } from 'node:crypto';
import type { Insertable } from 'kysely';
import type { PromotionalCodesTable } from '../../src/db/schema.ts';

// Rows of promotional codes in the shape the server stores them, for tests that need thousands of
// codes on a coupon (through the API the counts they check would take minutes).

/** A code row of the coupon, created `at` (an ISO time; later is newer). */
export function codeRow(programId: string, couponId: string, code: string, at: string, affiliateId: string | null = null): Insertable<PromotionalCodesTable> {
  return {
    id: randomUUID(), program_id: programId, coupon_id: couponId, affiliate_id: affiliateId, code, code_key: code.toLowerCase(),
    external_id: null, active: 1, expires_at: null, max_redemptions: null, times_redeemed: 0, first_time_order: 0,
    minimum_amount: null, minimum_amount_currency: null, limit_to_customers: 0, customer_id: null, limit_to_affiliate: 0,
    is_auto_generated: 0, created_at: at, updated_at: at,
  };
}
