// The held-entries migration (issue 30): a disputed sale's entries were held by a due date of
// 9999-12-31; after it they read `held` (held_by 'dispute') with a real date, and every other
// entry is untouched. Down restores the far date.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Kysely } from 'kysely';
import * as heldEntries from '../../src/db/migrations/2026-12-02T0100-held-entries.ts';
import * as unpaidEntries from '../../src/db/migrations/2026-12-03T0300-unpaid-entries.ts';
import { toIso } from '../../src/domain/clock.ts';
import { useMigratedDatabase, seedProgram } from '../helpers/migrated-database.ts';

const migrated = useMigratedDatabase();

describe('the held-entries migration', () => {
  it('turns the far due date of a held entry into held_by = dispute with a real date; down restores it', async () => {
    const db = migrated();
    const program = await seedProgram(db);
    const affiliateId = '00000000-0000-4000-8000-0000000000a1';
    const entry = (dueAt: string, createdAt: string) => ({
      program_id: program.id, affiliate_id: affiliateId, sale_id: null, kind: 'sale' as const, amount: 500, currency: 'USD', due_at: dueAt, created_at: createdAt,
    });
    // Back to the schema before it: the later index over held_by goes first.
    await unpaidEntries.down(db as unknown as Kysely<unknown>);
    await heldEntries.down(db as unknown as Kysely<unknown>);
    // What the previous version stored: one held entry (the far date), one in its hold.
    await (db as unknown as Kysely<any>).insertInto('commission_entries').values([entry('9999-12-31T00:00:00.000Z', '2026-11-01T10:00:00.000Z'), entry('2026-12-01T10:00:00.000Z', '2026-11-02T10:00:00.000Z')]).execute();
    await heldEntries.up(db as unknown as Kysely<unknown>);
    const rows = await db.selectFrom('commission_entries').select(['due_at', 'held_by']).where('program_id', '=', program.id).orderBy('id').execute();
    assert.deepEqual(rows.map((r) => [toIso(r.due_at), r.held_by]), [['2026-11-01T10:00:00.000Z', 'dispute'], ['2026-12-01T10:00:00.000Z', null]]);

    await heldEntries.down(db as unknown as Kysely<unknown>);
    const back = await (db as unknown as Kysely<any>).selectFrom('commission_entries').select(['due_at']).where('program_id', '=', program.id).orderBy('id').execute();
    assert.deepEqual(back.map((r: any) => toIso(r.due_at)), ['9999-12-31T00:00:00.000Z', '2026-12-01T10:00:00.000Z']);
    await heldEntries.up(db as unknown as Kysely<unknown>);
    await unpaidEntries.up(db as unknown as Kysely<unknown>);
  });
});
