import { invalidField } from './errors.ts';
import { scaleToInteger } from './decimals.ts';

/**
 * The largest amount or total of minor units Tandem keeps: beyond 2^53 − 1 a JSON number (a
 * double) no longer holds every integer, so an answer would drift from what is stored.
 */
export const MAX_MINOR_UNITS = Number.MAX_SAFE_INTEGER;

const digitsCache = new Map<string, number>();

/** Number of decimals of a currency's minor unit (USD 2, JPY 0, BHD 3), from the ICU tables. */
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

export function fromMinorUnits(minor: number | string, currency: string): number {
  return Number(minor) / 10 ** minorUnitDigits(currency);
}

/** Minor units as exact decimal text with the currency's digits, for files: 123456 USD → "1234.56", 500 JPY → "500", -5 USD → "-0.05". */
export function minorToDecimalText(minor: number | string, currency: string): string {
  const digits = minorUnitDigits(currency);
  const value = BigInt(minor);
  const negative = value < 0n;
  const magnitude = (negative ? -value : value).toString().padStart(digits + 1, '0');
  const whole = magnitude.slice(0, magnitude.length - digits);
  const fraction = digits > 0 ? `.${magnitude.slice(-digits)}` : '';
  return `${negative ? '-' : ''}${whole}${fraction}`;
}
