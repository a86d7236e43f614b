// The affiliate-counter-totals migration (issue 31): what each program's affiliates' referral
// and click counters add up to is filled from the affiliates stored, and its triggers keep it
// from then on; down drops table, triggers and (PostgreSQL) function.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Kysely } from 'kysely';
import * as affiliateCounterTotals from '../../src/db/migrations/2026-12-03T1100-affiliate-counter-totals.ts';
import { createAffiliate, getAffiliateCounterTotals } from '../../src/modules/affiliates/affiliate.service.ts';
import { createReferral } from '../../src/modules/referrals/referral.service.ts';
import { assertAffiliateCountsMatchRows } from '../helpers/recount.ts';
import { useMigratedDatabase, seedProgram } from '../helpers/migrated-database.ts';

const migrated = useMigratedDatabase();

describe('the affiliate-counter-totals migration', () => {
  it("fills each program's totals from its affiliates' counters; its triggers keep them after; down drops them", async () => {
    const db = migrated();
    const program = await seedProgram(db);
    const affiliates = [];
    for (let a = 0; a < 4; a++) affiliates.push(await createAffiliate(db, program, { firstName: 'A', lastName: `${a}`, email: `a${a}@totals.example` }));
    let n = 0;
    const refer = (affiliateId: string) => createReferral(db, program, { affiliateId, email: `r${n}@totals.example`, name: 'R', referredUserExternalId: `cus_${n++}` });
    for (const [a, count] of [[0, 3], [1, 1], [3, 2]] as const) for (let i = 0; i < count; i++) await refer(affiliates[a]!.id);
    await db.updateTable('affiliates').set({ number_of_clicks: 7 }).where('id', '=', affiliates[2]!.id).execute();
    const before = await getAffiliateCounterTotals(db, program);
    assert.deepEqual([before.referrals, before.clicks], [6, 7]);
    await affiliateCounterTotals.down(db as unknown as Kysely<unknown>);
    await affiliateCounterTotals.up(db as unknown as Kysely<unknown>);
    await assertAffiliateCountsMatchRows(db, program.id);
    assert.deepEqual(await getAffiliateCounterTotals(db, program), before);
    await refer(affiliates[1]!.id);
    assert.equal((await getAffiliateCounterTotals(db, program)).referrals, 7, 'the triggers work after up');
    await assertAffiliateCountsMatchRows(db, program.id);
  });
});
