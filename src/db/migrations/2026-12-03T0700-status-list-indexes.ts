import type { Kysely } from 'kysely';

// Lists filtered by a state (issue 31): the payouts page shows the pending payouts first, and
// there are none most of the month while the paid ones pile up (three per affiliate a year on
// the scale bench's program: 300,000); the affiliates' approval queue and their status filter
// look for the few pending sign-ups or inactive affiliates among all. With the state only in the
// WHERE clause, each walked the program's list index and tested every row (0.3 s for no pending
// payout). Keyed by (program, state, created_at, id), each reads only its rows, in list order.
// The approval index gains the id so its order is the list's keyset order.

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.createIndex('payouts_status_list').on('payouts').columns(['program_id', 'status', 'created_at', 'id']).execute();
  await db.schema.createIndex('affiliates_status_list').on('affiliates').columns(['program_id', 'status', 'created_at', 'id']).execute();
  await db.schema.dropIndex('affiliates_approval').execute();
  await db.schema.createIndex('affiliates_approval').on('affiliates').columns(['program_id', 'approval', 'created_at', 'id']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('affiliates_approval').execute();
  await db.schema.createIndex('affiliates_approval').on('affiliates').columns(['program_id', 'approval', 'created_at']).execute();
  await db.schema.dropIndex('affiliates_status_list').execute();
  await db.schema.dropIndex('payouts_status_list').execute();
}
