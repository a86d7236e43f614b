// The affiliate-counts migration (issue 31): a program's kept count of affiliates by shard and
// status is filled from the affiliates already stored, so the dashboard's list and overview
// count the same after an upgrade as before it.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Kysely } from 'kysely';
import * as affiliateCounts from '../../src/db/migrations/2026-12-03T0800-affiliate-counts.ts';
import { countAffiliatesMatching, createAffiliate, getAffiliateCounterTotals, updateAffiliate } from '../../src/modules/affiliates/affiliate.service.ts';
import { assertAffiliateCountsMatchRows } from '../helpers/recount.ts';
import { useMigratedDatabase, seedProgram } from '../helpers/migrated-database.ts';
import { createProgram, getProgram, toProgramContext } from '../../src/modules/programs/program.service.ts';
import { systemClock } from '../../src/domain/clock.ts';

const migrated = useMigratedDatabase();

describe('the affiliate-counts migration', () => {
  it("fills each program's counts from its stored affiliates, by shard and status; down drops them", async () => {
    const db = migrated();
    const program = await seedProgram(db);
    const { owner_user_id: owner } = await db.selectFrom('programs').select('owner_user_id').where('id', '=', program.id).executeTakeFirstOrThrow();
    const other = toProgramContext(await getProgram(db, (await createProgram(db, { ownerUserId: owner, name: 'Other', domain: 'other.example' })).id), systemClock);
    for (let a = 0; a < 40; a++) {
      const affiliate = await createAffiliate(db, program, { firstName: 'A', lastName: `${a}`, email: `a${a}@counts.example` }, a % 5 === 0 ? { approval: 'pending' } : {});
      if (a % 3 === 0) await updateAffiliate(db, program, affiliate.id, { status: 'inactive' });
    }
    await createAffiliate(db, other, { firstName: 'O', lastName: 'Other', email: 'o@counts.example' });
    const counts = async () => ({
      all: await countAffiliatesMatching(db, program, {}),
      active: await countAffiliatesMatching(db, program, { status: 'active' }),
      inactive: await countAffiliatesMatching(db, program, { status: 'inactive' }),
      overview: (await getAffiliateCounterTotals(db, program)).affiliates,
      other: (await getAffiliateCounterTotals(db, other)).affiliates,
    });
    const before = await counts();
    // 40 affiliates: every 5th pending (inactive), every 3rd deactivated (a 15th both).
    assert.deepEqual(before, { all: 40, active: 40 - 8 - 14 + 3, inactive: 8 + 14 - 3, overview: 40, other: 1 });

    await affiliateCounts.down(db as unknown as Kysely<unknown>);
    await affiliateCounts.up(db as unknown as Kysely<unknown>);
    await assertAffiliateCountsMatchRows(db, program.id);
    await assertAffiliateCountsMatchRows(db, other.id);
    assert.deepEqual(await counts(), before);
    const shards = await db.selectFrom('affiliate_counts').select('shard').distinct().where('program_id', '=', program.id).execute();
    assert.ok(shards.length > 1, 'the counts are spread over shards');
  });
});
