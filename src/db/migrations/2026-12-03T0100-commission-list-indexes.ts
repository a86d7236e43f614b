import { sql, type Kysely } from 'kysely';

// GET /commissions filtered by affiliate, sale or payout, read in list order (issue 31): the
// list is newest first (created_at desc, id desc) and pages by keyset, but the filters' indexes
// stopped at the filter's column. An affiliate's entries came from the program's list index,
// every entry of the program read to keep the affiliate's (0.6 s for an affiliate of a program
// with a million entries), or from (program_id, affiliate_id, due_at) and sorted whole for each
// page; a payout's entries (all that a run paid an affiliate) were sorted whole for each page.
// - commission_entries_affiliate_list: (program, affiliate, created_at, id), a walk of the
//   affiliate's own entries in list order. The (program, affiliate, due_at) index stays: a
//   payout run reads an affiliate's due entries by due date.
// - commission_entries_sale and commission_entries_payout gain (created_at, id) after their
//   column: the same walk for a sale's and a payout's entries. They take the place of the
//   narrower ones (each write keeps the same number of indexes), whose lookups (a sale's
//   entries, a payout's, by id alone) read the same prefix. Sale and payout ids are unique
//   across programs, so the program's condition is checked on those few rows; the payout index
//   stays partial (payout_id is null on most new entries: 2026-11-28T0100-partial-indexes).

const PAYOUT_SET = sql.ref('payout_id');

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createIndex('commission_entries_affiliate_list')
    .on('commission_entries')
    .columns(['program_id', 'affiliate_id', 'created_at', 'id'])
    .execute();
  await db.schema.dropIndex('commission_entries_sale').execute();
  await db.schema.createIndex('commission_entries_sale').on('commission_entries').columns(['sale_id', 'created_at', 'id']).execute();
  await db.schema.dropIndex('commission_entries_payout').execute();
  await db.schema
    .createIndex('commission_entries_payout')
    .on('commission_entries')
    .columns(['payout_id', 'created_at', 'id'])
    .where(PAYOUT_SET, 'is not', null)
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('commission_entries_payout').execute();
  await db.schema.createIndex('commission_entries_payout').on('commission_entries').column('payout_id').where(PAYOUT_SET, 'is not', null).execute();
  await db.schema.dropIndex('commission_entries_sale').execute();
  await db.schema.createIndex('commission_entries_sale').on('commission_entries').column('sale_id').execute();
  await db.schema.dropIndex('commission_entries_affiliate_list').execute();
}
