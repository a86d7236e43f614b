import { sql, type Kysely } from 'kysely';

// A deactivation or rejection ends an affiliate's portal sessions and login links for good
// (issue 29 item 12). affiliates.portal_generation goes up with every deactivation or rejection;
// a portal session or login link records the generation it was made in and works only while
// that is still the affiliate's, so reactivating or approving the affiliate again brings none
// of them back. Affiliates inactive or not approved now start one generation on, which ends
// whatever they still hold.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('affiliates').addColumn('portal_generation', 'integer', (c) => c.notNull().defaultTo(0)).execute();
  await db.schema.alterTable('portal_sessions').addColumn('affiliate_generation', 'integer', (c) => c.notNull().defaultTo(0)).execute();
  await db.schema.alterTable('portal_login_tokens').addColumn('affiliate_generation', 'integer', (c) => c.notNull().defaultTo(0)).execute();
  await sql`update affiliates set portal_generation = 1 where status <> 'active' or approval <> 'approved'`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('portal_login_tokens').dropColumn('affiliate_generation').execute();
  await db.schema.alterTable('portal_sessions').dropColumn('affiliate_generation').execute();
  await db.schema.alterTable('affiliates').dropColumn('portal_generation').execute();
}
