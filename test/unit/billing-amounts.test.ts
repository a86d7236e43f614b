// Providers' amounts (issue 32): each provider counts a currency in its own number of decimals;
// Tandem keeps the program's (ICU's). providerAmountToMinor converts one to the other or says in
// words why it cannot; cardProcessorDigits is the table Lemon Squeezy, Polar and Chargebee share.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { cardProcessorDigits, providerAmountToMinor } from '../../src/modules/billing/billing-input.ts';
import { billingProviderNamed } from '../../src/modules/billing/providers/index.ts';

const provider = (digits: number) => ({ displayName: 'Paddle', digits });

describe('providers’ amounts', () => {
  it('reads numbers and digit strings in the provider’s decimals, as the program’s minor units', () => {
    assert.deepEqual(providerAmountToMinor(4900, 'USD', 'total', provider(2)), { minor: 4900 });
    assert.deepEqual(providerAmountToMinor('4900', 'usd', 'total', provider(2)), { minor: 4900 });
    assert.deepEqual(providerAmountToMinor('5000', 'JPY', 'total', provider(0)), { minor: 5000 });
    assert.deepEqual(providerAmountToMinor(500000, 'JPY', 'total', provider(2)), { minor: 5000 }, 'hundredths of yen, as a provider counting JPY in two decimals sends them');
  });

  it('refuses, in words, what is no whole non-negative amount, or a fraction the currency does not keep', () => {
    assert.deepEqual(providerAmountToMinor('12.5', 'USD', 'total', provider(2)), { reason: `total must be a whole, non-negative number of Paddle's minor units ("12.5" is not)` });
    assert.deepEqual(providerAmountToMinor(-1, 'USD', 'total', provider(2)), { reason: "total must be a whole, non-negative number of Paddle's minor units (-1 is not)" });
    assert.deepEqual(providerAmountToMinor(12345, 'JPY', 'total', provider(2)), { reason: "total 12345 is 123.45 JPY by Paddle's count (2 decimals), which JPY in Tandem (0 decimals) cannot hold exactly" });
  });

  it('counts the zero-decimal currencies whole and every other in hundredths, for the providers that share the table', () => {
    assert.deepEqual(['JPY', 'krw', 'VND', 'USD', 'EUR', 'KWD'].map(cardProcessorDigits), [0, 0, 0, 2, 2, 2]);
    for (const name of ['lemonsqueezy', 'polar', 'chargebee']) {
      const p = billingProviderNamed(name)!;
      assert.deepEqual(p.amountToMinor(1200, 'JPY', 'x'), { minor: 1200 }, `${name}: 1200 yen`);
      assert.deepEqual(p.amountToMinor(1200, 'EUR', 'x'), { minor: 1200 }, `${name}: 12.00 euros`);
    }
    assert.deepEqual(billingProviderNamed('paddle')!.amountToMinor('1200', 'KRW', 'x'), { minor: 1200 });
  });
});
