// Decimal amounts and rates arrive as JSON numbers, that is as doubles. A JSON number parses to
// the double nearest to what the client wrote, and JavaScript prints a double in the shortest
// form that reads back as it (49.99, 1e-300): that printed form is the client's decimal, so its
// decimals can be counted exactly. Clients also send the results of their own arithmetic
// (0.1 + 0.2 = 0.30000000000000004), which is a few ulps away from the decimal they mean.

const PRINTED_NUMBER = /^(-?)(\d+)(?:\.(\d+))?(?:e([+-]\d+))?$/;

/** How far a value may be from its decimal and still count as that decimal (ulps of the value itself). */
const NOISE_ULPS = 4;
/** …and never more than this share of the last place, so large amounts get no rounding either. */
const MAX_NOISE = 0.01;

/**
 * `value × 10^places` as an integer (12.3456 with 4 places → 123456n), or null when `value`
 * has more than `places` decimals. A value that is float noise away from such a decimal counts
 * as it; the noise is measured against the value itself, never against 1, so that 1e-300 or
 * 5e-324 is not 0 but a number with too many decimals.
 */
export function scaleToInteger(value: number, places: number): bigint | null {
  const match = PRINTED_NUMBER.exec(String(value));
  if (!match) return null;
  const [, sign = '', whole = '', fraction = '', exponent = '0'] = match;
  // The printed form has no trailing zero after the point, so a shift below zero drops a digit
  // that is not zero.
  const shift = Number(exponent) - fraction.length + places;
  if (shift >= 0) return BigInt(`${sign}${whole}${fraction}`) * 10n ** BigInt(shift);
  const scaled = value * 10 ** places;
  const integer = Math.round(scaled);
  const noise = Math.abs(scaled - integer);
  return noise <= Math.min(NOISE_ULPS * Number.EPSILON * Math.abs(scaled), MAX_NOISE) ? BigInt(integer) : null;
}
