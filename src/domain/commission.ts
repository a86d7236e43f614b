import { invalidField } from './errors.ts';
import { scaleToInteger } from './decimals.ts';

// Commission rates are percentages (20 means 20 %) with up to four decimals, stored as
// integer millionths of the whole (20 % → 200000) so that commission arithmetic is exact.
const RATE_DECIMALS = 4;
const MILLIONTHS_PER_PERCENT = 10 ** RATE_DECIMALS;

/** A percentage as integer millionths; more than 4 decimals (12.34567, 1e-300) is a validation error at `pointer`. */
export function rateToMillionths(percent: number, pointer: string): number {
  const millionths = scaleToInteger(percent, RATE_DECIMALS);
  if (millionths === null) throw invalidField(pointer, `may have at most ${RATE_DECIMALS} decimals`);
  return Number(millionths);
}

export function millionthsToRate(millionths: number | string): number {
  return Number(millionths) / MILLIONTHS_PER_PERCENT;
}

/** totalEarned × rate / 100, rounded half away from zero to the minor unit, in exact integers. */
export function commissionFor(totalEarnedMinor: number, rateMillionths: number): number {
  const product = BigInt(totalEarnedMinor) * BigInt(rateMillionths);
  const divisor = 1_000_000n;
  const negative = product < 0n;
  const magnitude = negative ? -product : product;
  const rounded = (magnitude + divisor / 2n) / divisor;
  return Number(negative ? -rounded : rounded);
}

/**
 * The part of a sale's commission that a refund of `refundedMinor` out of `totalEarnedMinor`
 * takes back: commission × refunded / total, rounded half away from zero. Computed on the running
 * refunded total, so a full refund takes back exactly the whole commission however it was split.
 */
export function commissionTakenBack(commissionMinor: number, refundedMinor: number, totalEarnedMinor: number): number {
  if (totalEarnedMinor === 0 || refundedMinor === 0) return 0;
  const product = BigInt(commissionMinor) * BigInt(refundedMinor);
  const total = BigInt(totalEarnedMinor);
  const negative = product < 0n;
  const magnitude = negative ? -product : product;
  const rounded = (2n * magnitude + total) / (2n * total);
  return Number(negative ? -rounded : rounded);
}

/** A program's commission plan (CONTRACT "Commission plans and the ledger"); amounts in minor units. */
export interface CommissionPlan {
  readonly type: 'percentage' | 'flat';
  /** The flat amount per sale (type flat). */
  readonly flatAmount: number;
  /** Only sales within N months of the customer's referral earn; null: forever. */
  readonly durationMonths: number | null;
  /** Only a customer's first N sales earn; null: all. */
  readonly maxSalesPerCustomer: number | null;
  /** Days a commission waits for refunds before it can be paid. */
  readonly holdDays: number;
  /** The smallest balance a payout run pays. */
  readonly minimumPayout: number;
}

/** The rule a sale keeps for life: what it earns now, and again when PUT /sales changes its total. */
export type SaleRule = { rule: 'percentage'; rateMillionths: number } | { rule: 'flat'; flatMinor: number } | { rule: 'none' };

/** A sale's commission under its rule: the rate's share, the flat amount (never more than the total), or nothing. */
export function commissionUnder(rule: SaleRule, totalEarnedMinor: number): number {
  switch (rule.rule) {
    case 'percentage':
      return commissionFor(totalEarnedMinor, rule.rateMillionths);
    case 'flat':
      return Math.max(0, Math.min(rule.flatMinor, totalEarnedMinor));
    case 'none':
      return 0;
  }
}

/** `months` calendar months after `from` (UTC), the day clamped to the month's end: 31 Jan + 1 → 28/29 Feb. */
export function addMonths(from: Date, months: number): Date {
  const result = new Date(from.getTime());
  const day = result.getUTCDate();
  result.setUTCDate(1);
  result.setUTCMonth(result.getUTCMonth() + months);
  const lastDay = new Date(Date.UTC(result.getUTCFullYear(), result.getUTCMonth() + 1, 0)).getUTCDate();
  result.setUTCDate(Math.min(day, lastDay));
  return result;
}

const DAY_MS = 86_400_000;

/** When a commission recorded at `from` has waited out the plan's hold. */
export function endOfHold(from: Date, holdDays: number): Date {
  return new Date(from.getTime() + holdDays * DAY_MS);
}

/**
 * Whether a customer's sale earns under the plan: within `durationMonths` of the customer's
 * referral, and among the customer's first `maxSalesPerCustomer` sales.
 */
export function earnsUnderPlan(plan: CommissionPlan, sale: { at: Date; referredAt: Date; earlierSales: number }): boolean {
  if (plan.durationMonths !== null && sale.at.getTime() >= addMonths(sale.referredAt, plan.durationMonths).getTime()) return false;
  if (plan.maxSalesPerCustomer !== null && sale.earlierSales >= plan.maxSalesPerCustomer) return false;
  return true;
}
