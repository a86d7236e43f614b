// Commission arithmetic (src/domain/commission.ts): rates as integer millionths, a sale's
// commission rounded half away from zero in exact integers, what a refund takes back, the rule a
// sale keeps, and the plan's calendar (months, hold, which sales earn). Pure rules: no server,
// no database.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError } from '../../src/domain/errors.ts';
import {
  addMonths,
  commissionFor,
  commissionTakenBack,
  commissionUnder,
  earnsUnderPlan,
  endOfHold,
  millionthsToRate,
  rateToMillionths,
  type CommissionPlan,
} from '../../src/domain/commission.ts';

const at = (iso: string) => new Date(iso);

describe('rateToMillionths and millionthsToRate: a percentage stored exactly', () => {
  it('stores a percentage as millionths of the whole', () => {
    assert.equal(rateToMillionths(20, '#/rate'), 200_000);
    assert.equal(rateToMillionths(100, '#/rate'), 1_000_000);
    assert.equal(rateToMillionths(0, '#/rate'), 0);
    assert.equal(rateToMillionths(12.3456, '#/rate'), 123_456);
    assert.equal(rateToMillionths(0.0001, '#/rate'), 1);
    assert.equal(rateToMillionths(0.1 + 0.2, '#/rate'), 3_000, 'float noise is the decimal the client meant');
  });

  it('refuses more than four decimals at the pointer it is given', () => {
    for (const rate of [12.34567, 0.00001, 1e-300]) {
      assert.throws(
        () => rateToMillionths(rate, '#/commissionRate'),
        (error: unknown) => error instanceof ApiError && error.errors?.[0]?.pointer === '#/commissionRate' && /at most 4 decimals/.test(error.errors[0].detail),
        String(rate),
      );
    }
  });

  it('reads millionths back as the percentage, also from a column’s text', () => {
    assert.equal(millionthsToRate(200_000), 20);
    assert.equal(millionthsToRate('123456'), 12.3456);
    assert.equal(millionthsToRate(1), 0.0001);
  });
});

describe('commissionFor: total × rate, rounded half away from zero', () => {
  it('takes the rate’s share of the total in minor units', () => {
    assert.equal(commissionFor(10_000, 200_000), 2_000);
    assert.equal(commissionFor(4_999, 200_000), 1_000, '999.8 rounds to 1000');
    assert.equal(commissionFor(4_999, 1_000_000), 4_999);
    assert.equal(commissionFor(4_999, 0), 0);
    assert.equal(commissionFor(0, 200_000), 0);
  });

  it('rounds a half up in magnitude, below a half down, on both signs', () => {
    assert.equal(commissionFor(25, 100_000), 3, '2.5 → 3');
    assert.equal(commissionFor(-25, 100_000), -3, '-2.5 → -3');
    assert.equal(commissionFor(24, 100_000), 2, '2.4 → 2');
    assert.equal(commissionFor(-24, 100_000), -2, '-2.4 → -2');
    assert.equal(commissionFor(15, 100_000), 2, '1.5 → 2');
    assert.equal(commissionFor(1, 499_999), 0, '0.499999 → 0');
    assert.equal(commissionFor(1, 500_000), 1, '0.5 → 1');
  });

  it('stays exact where doubles would not', () => {
    // 739441505719772 × 31.4535 % is 232580234001568.486; in doubles the product (past 2^53)
    // loses its last digits and Math.round(total * rate / 1e6) gives …569.
    assert.equal(commissionFor(739_441_505_719_772, 314_535), 232_580_234_001_568);
    assert.equal(commissionFor(Number.MAX_SAFE_INTEGER, 123_456), 1_111_992_791_193_304);
    assert.equal(commissionFor(Number.MAX_SAFE_INTEGER, 1_000_000), Number.MAX_SAFE_INTEGER);
  });
});

describe('commissionTakenBack: what a refund takes back', () => {
  it('takes back the refunded share, rounded half away from zero', () => {
    assert.equal(commissionTakenBack(1_000, 2_500, 5_000), 500);
    assert.equal(commissionTakenBack(1_000, 5_000, 5_000), 1_000);
    assert.equal(commissionTakenBack(3, 1, 2), 2, '1.5 → 2');
    assert.equal(commissionTakenBack(-3, 1, 2), -2, '-1.5 → -2');
    assert.equal(commissionTakenBack(10, 1, 3), 3, '3.33 → 3');
    assert.equal(commissionTakenBack(10, 2, 3), 7, '6.67 → 7');
  });

  it('takes back nothing when nothing was refunded or the sale had no total', () => {
    assert.equal(commissionTakenBack(1_000, 0, 5_000), 0);
    assert.equal(commissionTakenBack(1_000, 0, 0), 0);
    assert.equal(commissionTakenBack(0, 100, 0), 0);
  });

  it('takes back exactly the whole commission on a full refund, however large', () => {
    for (const [commission, total] of [
      [10, 3],
      [1_000, 5_000],
      [7, 4_999],
      [1_111_992_791_193_304, Number.MAX_SAFE_INTEGER],
    ] as const) {
      assert.equal(commissionTakenBack(commission, total, total), commission, `${commission} of ${total}`);
    }
  });

  it('split refunds take back the differences of the running total: 10 of 3 refunded 1+1+1 is 3+4+3, not 3+3+3', () => {
    const increments = [1, 2, 3].map((refunded) => commissionTakenBack(10, refunded, 3) - commissionTakenBack(10, refunded - 1, 3));
    assert.deepEqual(increments, [3, 4, 3]);
  });
});

describe('commissionUnder: the rule a sale keeps', () => {
  it('a percentage rule takes the rate’s share', () => {
    assert.equal(commissionUnder({ rule: 'percentage', rateMillionths: 200_000 }, 4_999), 1_000);
  });

  it('a flat rule pays its amount, never more than the total and never below zero', () => {
    assert.equal(commissionUnder({ rule: 'flat', flatMinor: 500 }, 4_999), 500);
    assert.equal(commissionUnder({ rule: 'flat', flatMinor: 500 }, 300), 300);
    assert.equal(commissionUnder({ rule: 'flat', flatMinor: 500 }, 0), 0);
    assert.equal(commissionUnder({ rule: 'flat', flatMinor: 500 }, -100), 0);
  });

  it('no rule pays nothing', () => {
    assert.equal(commissionUnder({ rule: 'none' }, 4_999), 0);
  });
});

describe('addMonths: calendar months in UTC, clamped to the month’s end', () => {
  it('keeps the day and the time of day', () => {
    assert.equal(addMonths(at('2025-01-15T10:20:30.456Z'), 1).toISOString(), '2025-02-15T10:20:30.456Z');
    assert.equal(addMonths(at('2025-01-15T00:00:00.000Z'), 12).toISOString(), '2026-01-15T00:00:00.000Z');
    assert.equal(addMonths(at('2025-11-30T23:59:59.999Z'), 3).toISOString(), '2026-02-28T23:59:59.999Z');
  });

  it('clamps to the last day of a shorter month, leap years included', () => {
    assert.equal(addMonths(at('2023-01-31T12:00:00Z'), 1).toISOString(), '2023-02-28T12:00:00.000Z');
    assert.equal(addMonths(at('2024-01-31T12:00:00Z'), 1).toISOString(), '2024-02-29T12:00:00.000Z');
    assert.equal(addMonths(at('2025-03-31T00:00:00Z'), 1).toISOString(), '2025-04-30T00:00:00.000Z');
    assert.equal(addMonths(at('2024-02-29T00:00:00Z'), 12).toISOString(), '2025-02-28T00:00:00.000Z');
  });

  it('goes back for negative months and stays put for none', () => {
    assert.equal(addMonths(at('2025-03-31T00:00:00Z'), -1).toISOString(), '2025-02-28T00:00:00.000Z');
    assert.equal(addMonths(at('2025-01-10T00:00:00Z'), -1).toISOString(), '2024-12-10T00:00:00.000Z');
    assert.equal(addMonths(at('2025-05-31T08:00:00Z'), 0).toISOString(), '2025-05-31T08:00:00.000Z');
  });

  it('does not change the date it is given', () => {
    const from = at('2025-01-31T00:00:00Z');
    addMonths(from, 1);
    assert.equal(from.toISOString(), '2025-01-31T00:00:00.000Z');
  });
});

describe('endOfHold: when a commission has waited out the hold', () => {
  it('is the recorded time plus whole days of 24 hours', () => {
    assert.equal(endOfHold(at('2025-03-01T10:00:00Z'), 30).toISOString(), '2025-03-31T10:00:00.000Z');
    assert.equal(endOfHold(at('2025-03-01T10:00:00Z'), 0).toISOString(), '2025-03-01T10:00:00.000Z');
    // Across a daylight-saving change in most zones: still 24 hours a day in UTC.
    assert.equal(endOfHold(at('2025-03-29T12:00:00Z'), 2).toISOString(), '2025-03-31T12:00:00.000Z');
  });
});

describe('earnsUnderPlan: which sales of a customer earn', () => {
  const plan = (durationMonths: number | null, maxSalesPerCustomer: number | null): CommissionPlan => ({
    type: 'percentage',
    flatAmount: 0,
    durationMonths,
    maxSalesPerCustomer,
    holdDays: 30,
    minimumPayout: 0,
  });
  const referredAt = at('2025-01-31T09:00:00.000Z');

  it('earns forever with no duration and no cap', () => {
    assert.equal(earnsUnderPlan(plan(null, null), { at: at('2035-01-01T00:00:00Z'), referredAt, earlierSales: 10_000 }), true);
  });

  it('earns until the referral is `durationMonths` calendar months old, and not at that instant', () => {
    // 31 Jan + 1 month is 28 Feb 09:00.
    assert.equal(earnsUnderPlan(plan(1, null), { at: at('2025-02-28T08:59:59.999Z'), referredAt, earlierSales: 0 }), true);
    assert.equal(earnsUnderPlan(plan(1, null), { at: at('2025-02-28T09:00:00.000Z'), referredAt, earlierSales: 0 }), false);
    assert.equal(earnsUnderPlan(plan(1, null), { at: at('2025-03-01T00:00:00Z'), referredAt, earlierSales: 0 }), false);
    assert.equal(earnsUnderPlan(plan(12, null), { at: at('2025-12-31T00:00:00Z'), referredAt, earlierSales: 0 }), true);
  });

  it('earns on the customer’s first `maxSalesPerCustomer` sales only', () => {
    const sale = (earlierSales: number) => ({ at: at('2025-02-01T00:00:00Z'), referredAt, earlierSales });
    assert.equal(earnsUnderPlan(plan(null, 3), sale(0)), true);
    assert.equal(earnsUnderPlan(plan(null, 3), sale(2)), true);
    assert.equal(earnsUnderPlan(plan(null, 3), sale(3)), false);
    assert.equal(earnsUnderPlan(plan(null, 0), sale(0)), false);
  });

  it('needs both limits to allow the sale', () => {
    assert.equal(earnsUnderPlan(plan(1, 3), { at: at('2025-02-01T00:00:00Z'), referredAt, earlierSales: 3 }), false);
    assert.equal(earnsUnderPlan(plan(1, 3), { at: at('2025-03-01T00:00:00Z'), referredAt, earlierSales: 0 }), false);
    assert.equal(earnsUnderPlan(plan(1, 3), { at: at('2025-02-01T00:00:00Z'), referredAt, earlierSales: 2 }), true);
  });
});
