// Upgrading a database that already holds clicks (issue 17 item 6): the click-days migration
// fills the daily counts from the stored click rows — clicks of deleted links included — so the
// dashboard's daily figures are the same before and after it, and new clicks add to those rows.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Kysely } from 'kysely';
import * as clickDays from '../../src/db/migrations/2026-11-25T0200-click-days.ts';
import { inTransaction } from '../../src/db/transaction.ts';
import { newId } from '../../src/domain/ids.ts';
import { createAffiliate } from '../../src/modules/affiliates/affiliate.service.ts';
import { countClicksByDay } from '../../src/modules/tracking/click.repository.ts';
import { addClickToCounters } from '../../src/modules/ledger/ledger.repository.ts';
import { seedProgram, useMigratedDatabase } from '../helpers/migrated-database.ts';

const migrated = useMigratedDatabase();

describe('the click-days migration over stored clicks', () => {
  it('counts every stored click into its link and day, and later clicks add to those counts', async () => {
    const db = migrated();
    const program = await seedProgram(db);
    const ann = await createAffiliate(db, program, { firstName: 'Ann', lastName: 'Old', email: 'ann@example.com' });
    const bob = await createAffiliate(db, program, { firstName: 'Bob', lastName: 'Old', email: 'bob@example.com' });
    const linkOf = async (affiliateId: string) => (await db.selectFrom('affiliate_links').select('id').where('affiliate_id', '=', affiliateId).executeTakeFirstOrThrow()).id;
    const [annLink, bobLink] = [await linkOf(ann.id), await linkOf(bob.id)];

    // The schema before the daily counts, and the clicks it stored: Ann's own link, a link of
    // hers since deleted (link_id null), Bob's link; two days.
    await clickDays.down(db as unknown as Kysely<unknown>);
    const [first, second] = ['2026-11-20', '2026-11-21'];
    const click = (affiliateId: string, linkId: string | null, day: string) => ({
      id: newId(), program_id: program.id, affiliate_id: affiliateId, link_id: linkId, visitor_key: newId(), day, landing_url: 'https://old.example/?ref=x', created_at: `${day}T10:00:00.000Z`,
    });
    await db
      .insertInto('clicks')
      .values([
        click(ann.id, annLink, first), click(ann.id, annLink, first), click(ann.id, annLink, first),
        click(ann.id, null, first), click(ann.id, null, first),
        click(bob.id, bobLink, first),
        click(ann.id, annLink, second),
      ])
      .execute();

    await clickDays.up(db as unknown as Kysely<unknown>);
    const rows = await db.selectFrom('click_days').select(['affiliate_id', 'link_id', 'day', 'clicks']).where('program_id', '=', program.id).execute();
    const key = (r: { affiliate_id: string; link_id: string | null; day: string }) => `${r.affiliate_id === ann.id ? 'ann' : 'bob'}/${r.link_id === annLink ? 'own' : r.link_id === bobLink ? 'bob' : r.link_id}/${r.day}`;
    assert.deepEqual(Object.fromEntries(rows.map((r) => [key(r), Number(r.clicks)])), {
      [`ann/own/${first}`]: 3,
      [`ann/null/${first}`]: 2,
      [`bob/bob/${first}`]: 1,
      [`ann/own/${second}`]: 1,
    });
    assert.deepEqual(await countClicksByDay(db, program.id, first), [{ day: first, clicks: 6 }, { day: second, clicks: 1 }]);
    assert.deepEqual(await countClicksByDay(db, program.id, first, ann.id), [{ day: first, clicks: 5 }, { day: second, clicks: 1 }]);

    // A counted click after the upgrade adds to its link's row of the day.
    await inTransaction(db, (tx) => addClickToCounters(tx, { program_id: program.id, affiliate_id: ann.id, link_id: annLink, day: second }));
    assert.deepEqual(await countClicksByDay(db, program.id, second), [{ day: second, clicks: 2 }]);
    assert.equal((await db.selectFrom('click_days').select('id').where('link_id', '=', annLink).execute()).length, 2);
  });
});
