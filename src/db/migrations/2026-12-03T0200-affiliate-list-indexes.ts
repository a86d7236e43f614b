import type { Kysely } from 'kysely';

// Indexes for reads that grew with a program (issue 31):
// - an affiliate's payouts newest first (the portal, the affiliate's page, GET /payouts?affiliateId=)
//   in list order, id included, so the page is a walk of the affiliate's own rows; the old index
//   lacked the id and SQLite preferred walking the whole program's payouts instead;
// - billing events by age alone, for the purge: its `created_at < cutoff` found the old rows
//   only by reading the table (a million rows each pass once none were left).

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.createIndex('payouts_affiliate_list').on('payouts').columns(['program_id', 'affiliate_id', 'created_at', 'id']).execute();
  await db.schema.dropIndex('payouts_affiliate').execute();
  await db.schema.createIndex('billing_events_age').on('billing_events').column('created_at').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('billing_events_age').execute();
  await db.schema.createIndex('payouts_affiliate').on('payouts').columns(['program_id', 'affiliate_id', 'created_at']).execute();
  await db.schema.dropIndex('payouts_affiliate_list').execute();
}
