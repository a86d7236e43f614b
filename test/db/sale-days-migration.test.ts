// The sale-days migration (issue 31): a program's kept sales by day are filled from the sales
// already stored, so the overview and the sales list's totals read the same figures after an
// upgrade as before it.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Kysely } from 'kysely';
import * as saleDays from '../../src/db/migrations/2026-12-03T0400-sale-days.ts';
import { createAffiliate } from '../../src/modules/affiliates/affiliate.service.ts';
import { createSale, refundSale } from '../../src/modules/sales/sale.service.ts';
import { getProgramTotals } from '../../src/modules/reports/overview.service.ts';
import { assertCountersMatchRows } from '../helpers/recount.ts';
import { useMigratedDatabase, seedProgram } from '../helpers/migrated-database.ts';

const migrated = useMigratedDatabase();

describe('the sale-days migration', () => {
  it("fills each program's sale days from its stored sales, refunds included; down drops them", async () => {
    const db = migrated();
    const program = await seedProgram(db);
    for (let a = 0; a < 3; a++) {
      const affiliate = await createAffiliate(db, program, { firstName: 'A', lastName: `${a}`, email: `a${a}@days.example` });
      for (let s = 0; s < 4; s++) {
        const sale = await createSale(db, program, { totalEarned: 25 + s, referralId: affiliate.id, name: 'C', email: `c${a}-${s}@days.example` });
        if (s === 0) await refundSale(db, program, { saleId: sale.id, amount: 5 });
      }
    }
    const before = await getProgramTotals(db, program);
    await saleDays.down(db as unknown as Kysely<unknown>);
    await saleDays.up(db as unknown as Kysely<unknown>);
    await assertCountersMatchRows(db, program.id);
    assert.deepEqual(await getProgramTotals(db, program), before);
    assert.deepEqual([before.sales.count, before.sales.revenue], [12, 3 * (25 + 26 + 27 + 28 - 5) * 100]);
  });
});
