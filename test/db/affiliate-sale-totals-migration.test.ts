// The affiliate-sale-totals migration (issue 31): each affiliate's kept sales count, amount and
// refunds are filled from the sales already stored, so the sales list filtered by an affiliate
// shows after an upgrade the totals it added up before it.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql, type Kysely } from 'kysely';
import * as affiliateSaleTotals from '../../src/db/migrations/2026-12-03T0900-affiliate-sale-totals.ts';
import { createAffiliate } from '../../src/modules/affiliates/affiliate.service.ts';
import { createSale, getSaleTotals, refundSale } from '../../src/modules/sales/sale.service.ts';
import { assertCountersMatchRows } from '../helpers/recount.ts';
import { useMigratedDatabase, seedProgram } from '../helpers/migrated-database.ts';

const migrated = useMigratedDatabase();

describe('the affiliate-sale-totals migration', () => {
  it("fills each affiliate's sales count, amount and refunds from its stored sales; down drops them", async () => {
    const db = migrated();
    const program = await seedProgram(db);
    const affiliates = [];
    for (let a = 0; a < 3; a++) {
      const affiliate = await createAffiliate(db, program, { firstName: 'A', lastName: `${a}`, email: `a${a}@totals.example` });
      affiliates.push(affiliate.id);
      // The third affiliate has no sale: its totals stay 0.
      for (let s = 0; s < 2 - a + 1 && a < 2; s++) {
        const sale = await createSale(db, program, { totalEarned: 40 + s, referralId: affiliate.id, name: 'C', email: `c${a}-${s}@totals.example` });
        if (s === 0) await refundSale(db, program, { saleId: sale.id, amount: 4 });
      }
    }
    const before = await Promise.all(affiliates.map((affiliateId) => getSaleTotals(db, program, { affiliateId })));
    // Counted from the sales, not the kept columns (an affiliate and nothing else reads them).
    const recounted = await Promise.all(affiliates.map((affiliateId) => getSaleTotals(db, program, { affiliateId, createdFrom: '2000-01-01T00:00:00.000Z' })));
    assert.deepEqual(before, recounted);
    const first = before[0] as { count: number; amount: number; refunded: number };
    assert.deepEqual([first.count, first.amount, first.refunded], [3, 123 * 100, 400]);
    assert.deepEqual(before[2], { count: 0, amount: 0, refunded: 0, commission: 0 });
    await affiliateSaleTotals.down(db as unknown as Kysely<unknown>);
    const { rows } = await sql<{ name: string }>`select * from affiliates limit 1`.execute(db);
    assert.ok(!('number_of_sales' in rows[0]!), 'down drops the columns');
    await affiliateSaleTotals.up(db as unknown as Kysely<unknown>);
    await assertCountersMatchRows(db, program.id);
    assert.deepEqual(await Promise.all(affiliates.map((affiliateId) => getSaleTotals(db, program, { affiliateId }))), before);
  });
});
