// The unpaid-days migration (issue 31): a program's unpaid commission by due day is filled from
// the entries already stored — due, pending, held, in a pending payout, paid — so the payouts
// page shows after an upgrade the balance it added up from the entries before it.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Kysely } from 'kysely';
import * as unpaidDays from '../../src/db/migrations/2026-12-03T1000-unpaid-days.ts';
import { createAffiliate } from '../../src/modules/affiliates/affiliate.service.ts';
import { createSale, refundSale } from '../../src/modules/sales/sale.service.ts';
import { getLedgerBalance } from '../../src/modules/ledger/commission.service.ts';
import { holdSaleCommission } from '../../src/modules/ledger/entries.ts';
import { runPayouts, updatePayout } from '../../src/modules/payouts/payout.service.ts';
import { inTransaction } from '../../src/db/transaction.ts';
import { upkeepJob } from '../../src/modules/maintenance/upkeep-job.ts';
import { assertLedgerMatchesCounters } from '../helpers/recount.ts';
import { programAt as at, useMigratedDatabase, seedProgram } from '../helpers/migrated-database.ts';

const migrated = useMigratedDatabase();

describe('the unpaid-days migration', () => {
  it("fills each program's unpaid days from its unpaid entries, held and in payouts too; down drops them", async () => {
    const db = migrated();
    const program = await seedProgram(db);
    const affiliates = [];
    for (let a = 0; a < 3; a++) affiliates.push(await createAffiliate(db, program, { firstName: 'A', lastName: `${a}`, email: `a${a}@unpaid.example` }));
    let n = 0;
    const sell = (when: string, affiliateId: string, amount: number) =>
      createSale(db, at(program, when), { totalEarned: amount, referralId: affiliateId, name: 'C', email: `c${n++}@unpaid.example` });
    // Months ago (due, then paid or in a pending payout), last week (pending), one held.
    for (const affiliate of affiliates) await sell('2026-01-10T10:00:00.000Z', affiliate.id, 500);
    const refunded = await sell('2026-01-12T10:00:00.000Z', affiliates[0]!.id, 300);
    await refundSale(db, at(program, '2026-01-20T10:00:00.000Z'), { saleId: refunded.id, amount: 100 });
    const later = at(program, '2026-03-01T12:00:00.000Z');
    const payouts = await runPayouts(db, later, {});
    assert.ok(payouts.length >= 2, `payouts made: ${payouts.length}`);
    await updatePayout(db, later, { payoutId: payouts[0]!.id, status: 'paid' });
    const held = await sell('2026-02-20T10:00:00.000Z', affiliates[1]!.id, 700);
    await inTransaction(db, (tx) => holdSaleCommission(tx, program, held.id, 'dispute'));
    await sell('2026-02-25T10:00:00.000Z', affiliates[2]!.id, 900);
    await assertLedgerMatchesCounters(db, program.id);
    const before = await getLedgerBalance(db, later);
    await unpaidDays.down(db as unknown as Kysely<unknown>);
    await unpaidDays.up(db as unknown as Kysely<unknown>);
    await assertLedgerMatchesCounters(db, program.id);
    assert.deepEqual(await getLedgerBalance(db, later), before);
    assert.ok(before.held > 0 && before.due > 0 && before.pending > before.held && before.paid > 0, JSON.stringify(before));

    // Paid days leave rows of 0: the upkeep job deletes them, and nothing else changes. Every
    // payout is paid (affiliates share a day's row by their shard: paying one of two sharing it
    // would leave the other's amount).
    for (const payout of payouts.slice(1)) await updatePayout(db, later, { payoutId: payout.id, status: 'paid' });
    const balance = await getLedgerBalance(db, later);
    const rows = async () => (await db.selectFrom('unpaid_days').select(['amount']).where('program_id', '=', program.id).execute()).map((row) => Number(row.amount));
    assert.ok((await rows()).includes(0), 'a paid day left a row of 0');
    const quiet = { error: () => {}, warn: () => {}, debug: () => {} };
    await upkeepJob.run({ db, config: {} as never, clock: () => new Date(), log: quiet }, new Date());
    assert.ok((await rows()).length > 0 && !(await rows()).includes(0), 'only the rows of 0 went');
    assert.deepEqual(await getLedgerBalance(db, later), balance);
    await assertLedgerMatchesCounters(db, program.id);
  });
});
