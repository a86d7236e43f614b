import { invalidField } from './errors.ts';
import { scaleToInteger } from './decimals.ts';

/**
 * The largest amount or total of minor units Tandem keeps: beyond 2^53 − 1 a JSON number (a
 * double) no longer holds every integer, so an answer would drift from what is stored.
 */
export const MAX_MINOR_UNITS = Number.MAX_SAFE_INTEGER;

const digitsCache = new Map<string, number>();

/**
 * Number of decimals of a currency's minor unit (USD 2, JPY 0, BHD 3), from the ICU tables: how
 * Tandem keeps a program's money. A billing provider counts by its own table (Stripe's:
 * modules/billing/stripe-currencies.ts), converted with rescaleMinorUnits.
 */
export function minorUnitDigits(currency: string): number {
  let digits = digitsCache.get(currency);
  if (digits === undefined) {
    digits = new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions().maximumFractionDigits ?? 2;
    digitsCache.set(currency, digits);
  }
  return digits;
}

export function isCurrencyCode(value: string): boolean {
  if (!/^[A-Z]{3}$/.test(value)) return false;
  return Intl.supportedValuesOf('currency').includes(value);
}

/**
 * Converts an amount in major units (49.99) to integer minor units (4999). More decimals than
 * the currency has (12.345 USD, 1e-300) is a validation error at `pointer`; float noise
 * (0.1 + 0.2) is not (decimals.ts).
 */
export function toMinorUnits(amount: number, currency: string, pointer: string): number {
  const digits = minorUnitDigits(currency);
  const minor = scaleToInteger(amount, digits);
  if (minor === null) throw invalidField(pointer, `has more decimals than ${currency} allows (${digits})`);
  if (minor > BigInt(MAX_MINOR_UNITS) || minor < -BigInt(MAX_MINOR_UNITS)) throw invalidField(pointer, 'is too large');
  return Number(minor);
}

/**
 * An integer amount counted in units of 10^-`fromDigits` re-counted in units of 10^-`toDigits`
 * (a provider's minor units into the program's): 123400 hundredths → 1234 units, 12 units →
 * 1200 hundredths. Null when it does not come out exact (12345 hundredths in whole units) or
 * not within ±MAX_MINOR_UNITS.
 */
export function rescaleMinorUnits(amount: number, fromDigits: number, toDigits: number): number | null {
  if (!Number.isSafeInteger(amount)) return null;
  let value = BigInt(amount);
  if (toDigits >= fromDigits) {
    value *= 10n ** BigInt(toDigits - fromDigits);
  } else {
    const divisor = 10n ** BigInt(fromDigits - toDigits);
    if (value % divisor !== 0n) return null;
    value /= divisor;
  }
  return value > BigInt(MAX_MINOR_UNITS) || value < -BigInt(MAX_MINOR_UNITS) ? null : Number(value);
}

export function fromMinorUnits(minor: number | string, currency: string): number {
  return Number(minor) / 10 ** minorUnitDigits(currency);
}

/** Minor units as exact decimal text with the currency's digits, for files: 123456 USD → "1234.56", 500 JPY → "500", -5 USD → "-0.05". */
export function minorToDecimalText(minor: number | string, currency: string): string {
  return unitsToDecimalText(minor, minorUnitDigits(currency));
}

/** An integer count of 10^-`digits` units as exact decimal text: 12345 with 2 digits → "123.45". */
export function unitsToDecimalText(minor: number | string, digits: number): string {
  const value = BigInt(minor);
  const negative = value < 0n;
  const magnitude = (negative ? -value : value).toString().padStart(digits + 1, '0');
  const whole = magnitude.slice(0, magnitude.length - digits);
  const fraction = digits > 0 ? `.${magnitude.slice(-digits)}` : '';
  return `${negative ? '-' : ''}${whole}${fraction}`;
}
