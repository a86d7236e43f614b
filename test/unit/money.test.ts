// Money in integer minor units (src/domain/money.ts): how many decimals a currency has, how an
// amount in major units becomes minor units (or a 422 at its pointer), how a provider's minor
// units are re-counted in the program's, and how minor units are written into files. Pure
// rules: no server, no database.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError } from '../../src/domain/errors.ts';
import {
  MAX_MINOR_UNITS,
  fromMinorUnits,
  isCurrencyCode,
  minorToDecimalText,
  minorUnitDigits,
  rescaleMinorUnits,
  toMinorUnits,
  unitsToDecimalText,
} from '../../src/domain/money.ts';

/** Asserts `run` throws the API's validation error at `pointer` with a detail matching `detail`. */
function assertInvalidAt(run: () => unknown, pointer: string, detail: RegExp): void {
  assert.throws(run, (error: unknown) => {
    assert.ok(error instanceof ApiError, String(error));
    assert.equal(error.code, 'validation_failed');
    assert.equal(error.errors?.length, 1);
    assert.equal(error.errors?.[0]?.pointer, pointer);
    assert.match(error.errors?.[0]?.detail ?? '', detail);
    return true;
  });
}

describe('minorUnitDigits: the decimals of a currency', () => {
  it('follows the ICU tables: two for most, none for yen and won, three for the dinars', () => {
    assert.equal(minorUnitDigits('USD'), 2);
    assert.equal(minorUnitDigits('EUR'), 2);
    assert.equal(minorUnitDigits('JPY'), 0);
    assert.equal(minorUnitDigits('KRW'), 0);
    assert.equal(minorUnitDigits('BHD'), 3);
    assert.equal(minorUnitDigits('KWD'), 3);
  });

  it('answers the same the second time (from its cache)', () => {
    assert.equal(minorUnitDigits('JPY'), 0);
    assert.equal(minorUnitDigits('JPY'), 0);
    assert.equal(minorUnitDigits('BHD'), 3);
  });
});

describe('isCurrencyCode', () => {
  it('takes three upper-case letters that name a currency', () => {
    for (const code of ['USD', 'EUR', 'JPY', 'BHD', 'CHF']) assert.equal(isCurrencyCode(code), true, code);
  });

  it('refuses lower case, other lengths and codes that name no currency', () => {
    for (const code of ['usd', 'Usd', 'US', 'USDX', '', ' USD', 'US1', 'QQQ']) assert.equal(isCurrencyCode(code), false, code);
  });
});

describe('toMinorUnits: major units in, integer minor units out', () => {
  it('counts in the currency’s own minor unit', () => {
    assert.equal(toMinorUnits(49.99, 'USD', '#/amount'), 4999);
    assert.equal(toMinorUnits(0, 'USD', '#/amount'), 0);
    assert.equal(toMinorUnits(1, 'USD', '#/amount'), 100);
    assert.equal(toMinorUnits(500, 'JPY', '#/amount'), 500);
    assert.equal(toMinorUnits(1.234, 'BHD', '#/amount'), 1234);
    assert.equal(toMinorUnits(-5.01, 'USD', '#/amount'), -501);
  });

  it('reads float noise as the decimal the client meant', () => {
    assert.equal(toMinorUnits(0.1 + 0.2, 'USD', '#/amount'), 30);
    assert.equal(toMinorUnits(1.1 * 3, 'USD', '#/amount'), 330);
    assert.equal(toMinorUnits(0.07 * 3, 'USD', '#/amount'), 21);
  });

  it('refuses more decimals than the currency has, at the given pointer', () => {
    assertInvalidAt(() => toMinorUnits(12.345, 'USD', '#/totalEarned'), '#/totalEarned', /more decimals than USD allows \(2\)/);
    assertInvalidAt(() => toMinorUnits(500.5, 'JPY', '#/amount'), '#/amount', /more decimals than JPY allows \(0\)/);
    assertInvalidAt(() => toMinorUnits(1.2345, 'BHD', '#/amount'), '#/amount', /BHD allows \(3\)/);
  });

  it('refuses tiny numbers instead of rounding them to zero', () => {
    assertInvalidAt(() => toMinorUnits(1e-300, 'USD', '#/amount'), '#/amount', /more decimals/);
    assertInvalidAt(() => toMinorUnits(5e-324, 'USD', '#/amount'), '#/amount', /more decimals/);
    assertInvalidAt(() => toMinorUnits(0.001, 'USD', '#/amount'), '#/amount', /more decimals/);
  });

  it('keeps every amount a JSON number can hold exactly, and refuses beyond', () => {
    assert.equal(toMinorUnits(MAX_MINOR_UNITS, 'JPY', '#/amount'), MAX_MINOR_UNITS);
    assert.equal(toMinorUnits(-MAX_MINOR_UNITS, 'JPY', '#/amount'), -MAX_MINOR_UNITS);
    assertInvalidAt(() => toMinorUnits(MAX_MINOR_UNITS + 1, 'JPY', '#/amount'), '#/amount', /too large/);
    assertInvalidAt(() => toMinorUnits(-(MAX_MINOR_UNITS + 1), 'JPY', '#/amount'), '#/amount', /too large/);
    // 2^53 cents is within a double but 100 times past the limit in minor units.
    assertInvalidAt(() => toMinorUnits(MAX_MINOR_UNITS, 'USD', '#/amount'), '#/amount', /too large/);
    assertInvalidAt(() => toMinorUnits(1e300, 'USD', '#/amount'), '#/amount', /too large/);
  });
});

describe('rescaleMinorUnits: a provider’s minor units in the program’s', () => {
  it('re-counts exactly in either direction', () => {
    assert.equal(rescaleMinorUnits(123400, 2, 0), 1234);
    assert.equal(rescaleMinorUnits(12, 0, 2), 1200);
    assert.equal(rescaleMinorUnits(1234, 2, 3), 12340);
    assert.equal(rescaleMinorUnits(-500, 2, 0), -5);
    assert.equal(rescaleMinorUnits(4999, 2, 2), 4999);
    assert.equal(rescaleMinorUnits(0, 3, 0), 0);
  });

  it('gives null when the amount does not come out whole', () => {
    assert.equal(rescaleMinorUnits(12345, 2, 0), null);
    assert.equal(rescaleMinorUnits(-1, 3, 2), null);
  });

  it('gives null for a non-integer or unsafe input and for a result past the limit', () => {
    assert.equal(rescaleMinorUnits(1.5, 2, 2), null);
    assert.equal(rescaleMinorUnits(Number.NaN, 2, 2), null);
    assert.equal(rescaleMinorUnits(MAX_MINOR_UNITS + 1, 2, 2), null);
    assert.equal(rescaleMinorUnits(MAX_MINOR_UNITS, 0, 0), MAX_MINOR_UNITS);
    assert.equal(rescaleMinorUnits(MAX_MINOR_UNITS, 0, 1), null);
    assert.equal(rescaleMinorUnits(-MAX_MINOR_UNITS, 0, 1), null);
  });
});

describe('fromMinorUnits: back to major units for JSON', () => {
  it('divides by the currency’s unit, from a number or the text a database column gives', () => {
    assert.equal(fromMinorUnits(4999, 'USD'), 49.99);
    assert.equal(fromMinorUnits('4999', 'USD'), 49.99);
    assert.equal(fromMinorUnits(500, 'JPY'), 500);
    assert.equal(fromMinorUnits(1234, 'BHD'), 1.234);
    assert.equal(fromMinorUnits(-5, 'USD'), -0.05);
  });
});

describe('minorToDecimalText and unitsToDecimalText: exact text for files', () => {
  it('writes the currency’s digits, padded, with the sign in front', () => {
    assert.equal(minorToDecimalText(123456, 'USD'), '1234.56');
    assert.equal(minorToDecimalText(500, 'JPY'), '500');
    assert.equal(minorToDecimalText(-5, 'USD'), '-0.05');
    assert.equal(minorToDecimalText(0, 'USD'), '0.00');
    assert.equal(minorToDecimalText(7, 'BHD'), '0.007');
    assert.equal(minorToDecimalText('-1234', 'BHD'), '-1.234');
  });

  it('stays exact beyond what a double holds', () => {
    assert.equal(unitsToDecimalText('123456789012345678901', 2), '1234567890123456789.01');
    assert.equal(unitsToDecimalText(MAX_MINOR_UNITS, 2), '90071992547409.91');
  });

  it('writes any number of digits (none: a bare integer)', () => {
    assert.equal(unitsToDecimalText(12345, 2), '123.45');
    assert.equal(unitsToDecimalText(12345, 0), '12345');
    assert.equal(unitsToDecimalText(1, 4), '0.0001');
    assert.equal(unitsToDecimalText(-1, 4), '-0.0001');
  });
});
