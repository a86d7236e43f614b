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
