import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.ts';

// Refunds and edits of sales. A sale keeps its running refunded totals (amount and the
// commission taken back), so counters are adjusted by exact differences; each refund is also
// kept as its own row, the history a payout report needs. The lookups that GET /sales and
// GET /referrals filter on get indexes so a filter that matches nothing never walks a program.
export async function up(db: Kysely<unknown>): Promise<void> {
  const pg = dialectOf(db) === 'postgres';
  const uuid = pg ? sql`uuid` : sql`text`;
  const time = pg ? sql`timestamptz(3)` : sql`text`;
  const bigint = pg ? sql`bigint` : sql`integer`;

  await db.schema.alterTable('sales').addColumn('refunded_amount', bigint, (c) => c.notNull().defaultTo(0)).execute();
  await db.schema.alterTable('sales').addColumn('refunded_commission', bigint, (c) => c.notNull().defaultTo(0)).execute();
  await db.schema.alterTable('sales').addColumn('updated_at', time).execute();
  await sql`update sales set updated_at = created_at`.execute(db);

  await db.schema
    .createTable('sale_refunds')
    .addColumn('id', uuid, (c) => c.primaryKey())
    .addColumn('program_id', uuid, (c) => c.notNull().references('programs.id').onDelete('cascade'))
    .addColumn('sale_id', bigint, (c) => c.notNull().references('sales.id').onDelete('cascade'))
    .addColumn('amount', bigint, (c) => c.notNull())
    .addColumn('commission', bigint, (c) => c.notNull())
    .addColumn('created_at', time, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('sale_refunds_sale').on('sale_refunds').columns(['sale_id', 'created_at']).execute();

  await db.schema.createIndex('sales_external_id').on('sales').columns(['program_id', 'external_id']).execute();
  await db.schema.createIndex('sales_link').on('sales').columns(['link_id']).execute();
  await db.schema.createIndex('referrals_link').on('referrals').columns(['link_id']).execute();
  await db.schema.createIndex('referrals_external_id').on('referrals').columns(['program_id', 'referred_user_external_id']).execute();
  // Deleting a link or a code sets these to null (ON DELETE SET NULL): without an index, every
  // code deleted with a coupon would scan both tables.
  await db.schema.createIndex('sales_promotional_code').on('sales').columns(['promotional_code_id']).execute();
  await db.schema.createIndex('referrals_promotional_code').on('referrals').columns(['promotional_code_id']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('referrals_promotional_code').execute();
  await db.schema.dropIndex('sales_promotional_code').execute();
  await db.schema.dropIndex('referrals_external_id').execute();
  await db.schema.dropIndex('referrals_link').execute();
  await db.schema.dropIndex('sales_link').execute();
  await db.schema.dropIndex('sales_external_id').execute();
  await db.schema.dropTable('sale_refunds').execute();
  await db.schema.alterTable('sales').dropColumn('updated_at').execute();
  await db.schema.alterTable('sales').dropColumn('refunded_commission').execute();
  await db.schema.alterTable('sales').dropColumn('refunded_amount').execute();
}
