import type { Kysely } from 'kysely';

// The dashboard's sales list sorted by amount or by commission (issue 31): without an index in
// that order, each page sorted every sale of the program (half a second for a million). With
// these, a page is a walk of the index from its keyset position, as the newest-first list is.
// Each sale insert writes two more index entries (measured by `npm run bench`).

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.createIndex('sales_by_amount').on('sales').columns(['program_id', 'total_earned', 'id']).execute();
  await db.schema.createIndex('sales_by_commission').on('sales').columns(['program_id', 'commission', 'id']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('sales_by_commission').execute();
  await db.schema.dropIndex('sales_by_amount').execute();
}
