// Upgrading a database that already holds sales and refunds (issue 18): the ledger migration
// gives every stored sale its `sale` entry, every refund its `refund` entry and every edit
// that recomputed the commission taken back an `adjustment`, so the CONTRACT invariants hold
// from the first start: a sale's entries add up to its net commission, an affiliate's to its
// totalCommissionEarned.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql, type Kysely } from 'kysely';
import * as commissionLedger from '../../src/db/migrations/2026-11-26T0100-commission-ledger.ts';
import { toIso } from '../../src/domain/clock.ts';
import { createAffiliate } from '../../src/modules/affiliates/affiliate.service.ts';
import { createSale, refundSale, updateSale, voidSale } from '../../src/modules/sales/sale.service.ts';
import { getProgram, toProgramContext } from '../../src/modules/programs/program.service.ts';
import { systemClock } from '../../src/domain/clock.ts';
import { seedProgram, useMigratedDatabase } from '../helpers/migrated-database.ts';

const migrated = useMigratedDatabase();
const DAY_MS = 86_400_000;

describe('the commission-ledger migration over stored sales', () => {
  it('writes the entries of every stored sale and refund; the sums equal the counters', async () => {
    const db = migrated();
    const program = await seedProgram(db);
    const ann = await createAffiliate(db, program, { firstName: 'Ann', lastName: 'Old', email: 'ann@example.com', commissionRate: 10 });
    const bob = await createAffiliate(db, program, { firstName: 'Bob', lastName: 'Old', email: 'bob@example.com' });
    // What the previous version stored: sales, refunds in parts, an edit after a refund, a void.
    const plain = await createSale(db, program, { referralId: ann.id, email: 'a@example.org', name: 'A', totalEarned: 100 });
    const refunded = await createSale(db, program, { referralId: ann.id, email: 'b@example.org', name: 'B', totalEarned: 100.01 });
    await refundSale(db, program, { saleId: refunded.id, amount: 33.33 });
    await refundSale(db, program, { saleId: refunded.id, amount: 33.33 });
    const edited = await createSale(db, program, { referralId: bob.id, email: 'c@example.org', name: 'C', totalEarned: 80 });
    await refundSale(db, program, { saleId: edited.id, amount: 30 });
    await updateSale(db, program, edited.id, { totalEarned: 90, commissionRate: 33.3333 });
    const gone = await createSale(db, program, { referralId: bob.id, email: 'd@example.org', name: 'D', totalEarned: 10 });
    await voidSale(db, program, gone.id);

    await commissionLedger.down(db as unknown as Kysely<unknown>);
    const before = await sql<{ n: number }>`select count(*) as n from sales`.execute(db);
    assert.equal(Number(before.rows[0]!.n), 3, 'the old schema holds the three sales left');
    await commissionLedger.up(db as unknown as Kysely<unknown>);

    const entries = await db.selectFrom('commission_entries').selectAll().orderBy('id').execute();
    const ofSale = (id: number) => entries.filter((e) => Number(e.sale_id) === id);
    const total = (rows: { amount: number | string }[]) => rows.reduce((s, e) => s + Number(e.amount), 0);
    for (const sale of await db.selectFrom('sales').selectAll().execute()) {
      assert.equal(total(ofSale(Number(sale.id))), Number(sale.commission) - Number(sale.refunded_commission), `sale ${sale.id}: its entries add up to its net commission`);
      const [first] = ofSale(Number(sale.id));
      assert.equal(first!.kind, 'sale');
      assert.equal(Number(first!.amount), Number(sale.commission));
      for (const entry of ofSale(Number(sale.id))) {
        assert.equal(Date.parse(toIso(entry.due_at)), Date.parse(toIso(sale.created_at)) + 30 * DAY_MS, 'due with the sale after the default 30-day hold');
        assert.deepEqual([entry.payout_id, entry.paid_at, entry.currency, entry.program_id], [null, null, 'USD', program.id]);
      }
      assert.equal(sale.commission_rule, 'percentage', 'stored sales were percentage sales');
    }
    assert.deepEqual(ofSale(plain.id).map((e) => e.kind), ['sale']);
    assert.deepEqual(ofSale(refunded.id).map((e) => [e.kind, Number(e.amount)]), [['sale', 1000], ['refund', -333], ['refund', -334]]);
    assert.deepEqual(ofSale(edited.id).map((e) => e.kind), ['sale', 'refund', 'adjustment'], 'the edit recomputed the commission taken back');
    assert.equal(ofSale(gone.id).length, 0, 'a sale voided before the ledger leaves nothing to account for');
    for (const affiliate of await db.selectFrom('affiliates').select(['id', 'total_commission_earned']).execute()) {
      assert.equal(total(entries.filter((e) => e.affiliate_id === affiliate.id)), Number(affiliate.total_commission_earned), "an affiliate's entries add up to its totalCommissionEarned");
    }

    // The program has the default plan, and new sales write their entries on top.
    const context = toProgramContext(await getProgram(db, program.id), systemClock);
    assert.deepEqual(context.plan, { type: 'percentage', flatAmount: 0, durationMonths: null, maxSalesPerCustomer: null, holdDays: 30, minimumPayout: 0 });
    const fresh = await createSale(db, context, { referralId: ann.id, email: 'e@example.org', name: 'E', totalEarned: 50 });
    assert.equal(fresh.commission, 5);
    assert.equal(total(await db.selectFrom('commission_entries').select('amount').where('affiliate_id', '=', ann.id).execute()), 1000 + 333 + 500);
  });
});
