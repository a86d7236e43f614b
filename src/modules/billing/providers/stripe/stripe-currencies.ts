import { providerAmountToMinor } from '../../billing-input.ts';

// How Stripe counts an amount (docs.stripe.com/currencies, "Minor units in API amounts"): in a
// currency's smallest unit by Stripe's own table, which is not ICU's (money.ts, the program's
// currency). Stripe counts every currency in hundredths except its zero-decimal and
// three-decimal ones — also those ICU (and ISO 4217's cash practice) gives no decimals: HUF,
// ISK, IDR, COP, PKR… and, by Stripe's "special cases", ISK, HUF and TWD, which it charges or
// pays out only in whole units but still counts in hundredths (1 Ft is 100). Reading Stripe's
// amounts with ICU's exponent made a 10,000 Ft invoice (1000000) a sale of 1,000,000 Ft.

/** Stripe's zero-decimal currencies: an amount is in whole units (500 JPY is 500). */
const ZERO_DECIMAL = new Set(['BIF', 'CLP', 'DJF', 'GNF', 'JPY', 'KMF', 'KRW', 'MGA', 'PYG', 'RWF', 'UGX', 'VND', 'VUV', 'XAF', 'XOF', 'XPF']);
/** Stripe's three-decimal currencies: an amount is in thousandths (5.124 KWD is 5124; Stripe rounds the last digit to 0). */
const THREE_DECIMAL = new Set(['BHD', 'JOD', 'KWD', 'OMR', 'TND']);

/** How many decimals a Stripe amount in `currency` (any letter case) counts: 0, 3, or 2 for every other currency. */
export function stripeMinorUnitDigits(currency: string): number {
  const code = currency.toUpperCase();
  if (ZERO_DECIMAL.has(code)) return 0;
  if (THREE_DECIMAL.has(code)) return 3;
  return 2;
}

/**
 * A Stripe amount of the program's currency in the program's minor units (by the program's
 * exponent), or why it cannot be one: a fraction the program's currency does not keep (12345
 * HUF from Stripe is 123.45 Ft; Tandem keeps forints whole), or not a whole number of Stripe's
 * units within the largest amount Tandem holds.
 */
export function stripeAmountToMinor(amount: unknown, currency: string, field: string): { minor: number } | { reason: string } {
  // Stripe's amounts are JSON numbers: a digit string is no Stripe amount.
  if (typeof amount === 'string') return { reason: `${field} must be a whole, non-negative number of Stripe's minor units (${JSON.stringify(amount)} is not)` };
  return providerAmountToMinor(amount, currency, field, { displayName: 'Stripe', digits: stripeMinorUnitDigits(currency) });
}
