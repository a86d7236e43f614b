// The sales list's totals from what is kept (issue 31), against the same totals added up from
// the sales: a range of whole UTC days (the dashboard's date filter) reads those days' sale_days
// rows; one affiliate alone reads its row's counters. Each must equal the sum of the rows.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createAffiliate } from '../../src/modules/affiliates/affiliate.service.ts';
import { createSale, getSaleTotals, refundSale } from '../../src/modules/sales/sale.service.ts';
import { sumFilteredSales, type SaleFilter } from '../../src/modules/sales/sale.repository.ts';
import { programAt as at, useMigratedDatabase, seedProgram } from '../helpers/migrated-database.ts';

const migrated = useMigratedDatabase();

describe('the sales totals from kept rows', () => {
  it('equal the sums of the sales, for whole UTC days and for one affiliate, and rows answer any other filter', async () => {
    const db = migrated();
    const program = await seedProgram(db);
    const [ann, bob] = [
      await createAffiliate(db, program, { firstName: 'Ann', lastName: 'A', email: 'ann@totals.example' }),
      await createAffiliate(db, program, { firstName: 'Bob', lastName: 'B', email: 'bob@totals.example' }),
    ];
    let n = 0;
    const sell = async (when: string, affiliateId: string, amount: number) =>
      createSale(db, at(program, when), { totalEarned: amount, referralId: affiliateId, name: 'C', email: `c${n++}@totals.example` });
    await sell('2026-03-01T00:00:00.000Z', ann.id, 10);
    await sell('2026-03-01T23:59:59.999Z', bob.id, 20);
    const refunded = await sell('2026-03-02T12:00:00.000Z', ann.id, 40);
    await refundSale(db, at(program, '2026-03-04T08:00:00.000Z'), { saleId: refunded.id, amount: 15 });
    await sell('2026-03-03T00:00:00.000Z', bob.id, 80);
    await sell('2026-03-05T06:00:00.000Z', ann.id, 160);

    const filters: SaleFilter[] = [
      { createdFrom: '2026-03-01T00:00:00.000Z', createdBefore: '2026-03-02T00:00:00.000Z' },
      { createdFrom: '2026-03-02T00:00:00.000Z', createdBefore: '2026-03-04T00:00:00.000Z' },
      { createdFrom: '2026-03-02T00:00:00.000Z' },
      { createdBefore: '2026-03-03T00:00:00.000Z' },
      { createdFrom: '2026-03-06T00:00:00.000Z' },
      { affiliateId: ann.id },
      { affiliateId: bob.id },
      // Not whole days, or more than one kind of filter: added up from the rows.
      { createdFrom: '2026-03-01T12:00:00.000Z' },
      { affiliateId: ann.id, createdFrom: '2026-03-02T00:00:00.000Z' },
    ];
    const counts = [];
    for (const filter of filters) {
      const kept = await getSaleTotals(db, program, filter);
      assert.deepEqual(kept, await sumFilteredSales(db, program.id, filter), JSON.stringify(filter));
      counts.push((kept as { count: number }).count);
    }
    assert.deepEqual(counts, [2, 2, 3, 3, 0, 3, 2, 4, 2]);
    const [firstDay] = [await getSaleTotals(db, program, filters[0]!)] as { amount: number }[];
    assert.equal(firstDay!.amount, 3000);
    const ann2 = (await getSaleTotals(db, program, { affiliateId: ann.id })) as { amount: number; refunded: number };
    assert.deepEqual([ann2.amount, ann2.refunded], [21000, 1500]);
  });
});
