import { invalidField } from './errors.ts';

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
 * Converts an amount in major units (49.99) to integer minor units (4999).
 * More decimals than the currency has is a validation error at `pointer`.
 */
export function toMinorUnits(amount: number, currency: string, pointer: string): number {
  const scale = 10 ** minorUnitDigits(currency);
  const scaled = amount * scale;
  const minor = Math.round(scaled);
  // An amount with at most `digits` decimals lands within a few ulps of an integer once scaled;
  // a looser, relative tolerance would round 12345.678 USD to 12345.68 instead of rejecting it.
  if (Math.abs(scaled - minor) > 4 * Number.EPSILON * Math.max(1, Math.abs(scaled))) {
    throw invalidField(pointer, `has more decimals than ${currency} allows (${minorUnitDigits(currency)})`);
  }
  if (!Number.isSafeInteger(minor)) throw invalidField(pointer, 'is too large');
  return minor;
}

export function fromMinorUnits(minor: number | string, currency: string): number {
  return Number(minor) / 10 ** minorUnitDigits(currency);
}
