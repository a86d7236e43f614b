import { sql, type Kysely } from 'kysely';

// A ledger balance without reading the paid history (issue 31): the portal, an affiliate's page
// and the payouts page summed every entry a program or affiliate ever had (1.1 million for a
// program of a million sales; 11,000 for an affiliate of 10,000 sales) to split them into
// pending, due and paid. Paid entries never change again, and the entries of an affiliate add up
// to its kept `total_commission_earned` (CONTRACT's invariant), so paid = earned − unpaid and only
// the unpaid entries need reading: the hold window and what is due, not the years before.
// - commission_entries_unpaid: the unpaid entries only (partial: `paid_at is null`), by program,
//   affiliate and due time, holding every column a balance and a payout run read (paid_at too,
//   always null here: SQLite counts an index covering only when it holds every column named), so
//   neither touches the table. It takes the place of (program_id, affiliate_id, due_at), whose only
//   reader, the payout run, reads unpaid entries alone: each write keeps the same number of
//   indexes, and a paid entry leaves this one.

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createIndex('commission_entries_unpaid')
    .on('commission_entries')
    .columns(['program_id', 'affiliate_id', 'due_at', 'held_by', 'payout_id', 'amount', 'paid_at'])
    .where(sql.ref('paid_at'), 'is', null)
    .execute();
  await db.schema.dropIndex('commission_entries_affiliate').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.createIndex('commission_entries_affiliate').on('commission_entries').columns(['program_id', 'affiliate_id', 'due_at']).execute();
  await db.schema.dropIndex('commission_entries_unpaid').execute();
}
