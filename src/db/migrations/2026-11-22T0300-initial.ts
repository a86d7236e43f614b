import { sql, type Kysely, type ColumnDefinitionBuilder, type CreateTableBuilder } from 'kysely';
import { dialectOf } from '../dialect.ts';

// The same migration builds an equivalent schema on SQLite and PostgreSQL;
// only the column types differ (native uuid/timestamptz/bigint/boolean on PostgreSQL).
export async function up(db: Kysely<unknown>): Promise<void> {
  const pg = dialectOf(db) === 'postgres';
  const uuid = pg ? sql`uuid` : sql`text`;
  const time = pg ? sql`timestamptz(3)` : sql`text`;
  const bigint = pg ? sql`bigint` : sql`integer`;
  const bool = pg ? sql`boolean` : sql`integer`;
  const notNull = (c: ColumnDefinitionBuilder) => c.notNull();
  const counter = (c: ColumnDefinitionBuilder) => c.notNull().defaultTo(0);
  const stamps = <T extends string>(t: CreateTableBuilder<T>) =>
    t.addColumn('created_at', time, notNull).addColumn('updated_at', time, notNull);
  const programRef = (c: ColumnDefinitionBuilder) => c.notNull().references('programs.id').onDelete('cascade');

  await stamps(
    db.schema
      .createTable('users')
      .addColumn('id', uuid, (c) => c.primaryKey())
      .addColumn('email', 'text', notNull)
      .addColumn('email_key', 'text', (c) => c.notNull().unique())
      .addColumn('password_hash', 'text', notNull),
  ).execute();

  await stamps(
    db.schema
      .createTable('programs')
      .addColumn('id', uuid, (c) => c.primaryKey())
      .addColumn('owner_user_id', uuid, (c) => c.notNull().references('users.id'))
      .addColumn('name', 'text', notNull)
      .addColumn('domain', 'text', notNull)
      .addColumn('logo_url', 'text')
      .addColumn('currency', 'text', notNull)
      .addColumn('default_commission_rate', bigint, notNull)
      .addColumn('base_urls', 'text', notNull)
      .addColumn('referral_param', 'text', notNull),
  ).execute();
  await db.schema.createIndex('programs_owner').on('programs').column('owner_user_id').execute();

  await db.schema
    .createTable('api_tokens')
    .addColumn('id', uuid, (c) => c.primaryKey())
    .addColumn('program_id', uuid, programRef)
    .addColumn('name', 'text', notNull)
    .addColumn('prefix', 'text', notNull)
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('kind', 'text', notNull)
    .addColumn('integration', 'text')
    .addColumn('created_by_user_id', uuid, (c) => c.references('users.id'))
    .addColumn('created_at', time, notNull)
    .addColumn('last_used_at', time)
    .addColumn('revoked_at', time)
    .execute();
  await db.schema.createIndex('api_tokens_program').on('api_tokens').columns(['program_id', 'created_at']).execute();

  await stamps(
    db.schema
      .createTable('affiliates')
      .addColumn('id', uuid, (c) => c.primaryKey())
      .addColumn('program_id', uuid, programRef)
      .addColumn('first_name', 'text', notNull)
      .addColumn('last_name', 'text', notNull)
      .addColumn('email', 'text', notNull)
      .addColumn('email_key', 'text', notNull)
      .addColumn('email_verified', bool, notNull)
      .addColumn('image', 'text')
      .addColumn('payout_email', 'text', notNull)
      .addColumn('payment_method', 'text', notNull)
      .addColumn('commission_rate', bigint)
      .addColumn('status', 'text', notNull)
      .addColumn('number_of_referred_users', bigint, counter)
      .addColumn('number_of_clicks', bigint, counter)
      .addColumn('total_commission_earned', bigint, counter),
  ).execute();
  await db.schema.createIndex('affiliates_email').unique().on('affiliates').columns(['program_id', 'email_key']).execute();
  await db.schema.createIndex('affiliates_list').on('affiliates').columns(['program_id', 'created_at', 'id']).execute();

  await stamps(
    db.schema
      .createTable('affiliate_links')
      .addColumn('id', uuid, (c) => c.primaryKey())
      .addColumn('program_id', uuid, programRef)
      .addColumn('affiliate_id', uuid, (c) => c.notNull().references('affiliates.id').onDelete('cascade'))
      .addColumn('link', 'text', notNull)
      .addColumn('link_key', 'text', notNull)
      .addColumn('is_primary', bool, notNull)
      .addColumn('clicks', bigint, counter)
      .addColumn('referrals', bigint, counter)
      .addColumn('sales', bigint, counter)
      .addColumn('total_revenue', bigint, counter),
  ).execute();
  await db.schema.createIndex('affiliate_links_link').unique().on('affiliate_links').columns(['program_id', 'link_key']).execute();
  await db.schema.createIndex('affiliate_links_affiliate').on('affiliate_links').columns(['affiliate_id', 'is_primary']).execute();
  await db.schema.createIndex('affiliate_links_list').on('affiliate_links').columns(['program_id', 'created_at', 'id']).execute();

  await stamps(
    db.schema
      .createTable('coupons')
      .addColumn('id', uuid, (c) => c.primaryKey())
      .addColumn('program_id', uuid, programRef)
      .addColumn('name', 'text', notNull)
      .addColumn('external_id', 'text')
      .addColumn('coupon_type', 'text', notNull)
      .addColumn('percent_off', pg ? sql`double precision` : sql`real`)
      .addColumn('amount_off', bigint)
      .addColumn('currency', 'text')
      .addColumn('duration', 'text', notNull)
      .addColumn('duration_in_months', 'integer')
      .addColumn('max_redemptions', bigint)
      .addColumn('times_redeemed', bigint, counter)
      .addColumn('limit_to_products', bool, notNull)
      .addColumn('product_ids', 'text', notNull)
      .addColumn('valid', bool, notNull)
      .addColumn('redeem_by', time)
      .addColumn('integration_type', 'text'),
  ).execute();
  await db.schema.createIndex('coupons_external_id').unique().on('coupons').columns(['program_id', 'external_id']).execute();
  await db.schema.createIndex('coupons_name').on('coupons').columns(['program_id', 'name']).execute();
  await db.schema.createIndex('coupons_list').on('coupons').columns(['program_id', 'created_at', 'id']).execute();

  await stamps(
    db.schema
      .createTable('promotional_codes')
      .addColumn('id', uuid, (c) => c.primaryKey())
      .addColumn('program_id', uuid, programRef)
      .addColumn('coupon_id', uuid, (c) => c.notNull().references('coupons.id').onDelete('cascade'))
      .addColumn('affiliate_id', uuid, (c) => c.references('affiliates.id').onDelete('set null'))
      .addColumn('code', 'text', notNull)
      .addColumn('code_key', 'text', notNull)
      .addColumn('external_id', 'text')
      .addColumn('active', bool, notNull)
      .addColumn('expires_at', time)
      .addColumn('max_redemptions', bigint)
      .addColumn('times_redeemed', bigint, counter)
      .addColumn('first_time_order', bool, notNull)
      .addColumn('minimum_amount', bigint)
      .addColumn('minimum_amount_currency', 'text')
      .addColumn('limit_to_customers', bool, notNull)
      .addColumn('customer_id', 'text')
      .addColumn('limit_to_affiliate', bool, notNull)
      .addColumn('is_auto_generated', bool, notNull),
  ).execute();
  await db.schema.createIndex('promotional_codes_code').unique().on('promotional_codes').columns(['program_id', 'code_key']).execute();
  await db.schema.createIndex('promotional_codes_external_id').unique().on('promotional_codes').columns(['program_id', 'external_id']).execute();
  await db.schema.createIndex('promotional_codes_coupon').on('promotional_codes').columns(['coupon_id', 'created_at', 'id']).execute();
  await db.schema.createIndex('promotional_codes_affiliate').on('promotional_codes').columns(['affiliate_id', 'created_at', 'id']).execute();
  await db.schema.createIndex('promotional_codes_list').on('promotional_codes').columns(['program_id', 'created_at', 'id']).execute();

  await stamps(
    db.schema
      .createTable('referrals')
      .addColumn('id', uuid, (c) => c.primaryKey())
      .addColumn('program_id', uuid, programRef)
      .addColumn('affiliate_id', uuid, (c) => c.notNull().references('affiliates.id').onDelete('cascade'))
      .addColumn('link_id', uuid, (c) => c.references('affiliate_links.id').onDelete('set null'))
      .addColumn('promotional_code_id', uuid, (c) => c.references('promotional_codes.id').onDelete('set null'))
      .addColumn('name', 'text', notNull)
      .addColumn('email', 'text', notNull)
      .addColumn('email_key', 'text', notNull)
      .addColumn('referred_user_external_id', 'text', notNull)
      .addColumn('plan', 'text', notNull)
      .addColumn('status', 'text', notNull),
  ).execute();
  await db.schema.createIndex('referrals_email').unique().on('referrals').columns(['program_id', 'email_key']).execute();
  await db.schema.createIndex('referrals_list').on('referrals').columns(['program_id', 'created_at', 'id']).execute();
  await db.schema.createIndex('referrals_affiliate').on('referrals').columns(['affiliate_id', 'created_at', 'id']).execute();

  await db.schema
    .createTable('sales')
    .addColumn('id', pg ? sql`bigint` : sql`integer`, (c) =>
      pg ? c.primaryKey().generatedByDefaultAsIdentity() : c.primaryKey().autoIncrement(),
    )
    .addColumn('program_id', uuid, programRef)
    .addColumn('affiliate_id', uuid, (c) => c.notNull().references('affiliates.id').onDelete('cascade'))
    .addColumn('referral_id', uuid, (c) => c.notNull().references('referrals.id').onDelete('cascade'))
    .addColumn('link_id', uuid, (c) => c.references('affiliate_links.id').onDelete('set null'))
    .addColumn('promotional_code_id', uuid, (c) => c.references('promotional_codes.id').onDelete('set null'))
    .addColumn('external_id', 'text', notNull)
    .addColumn('external_invoice_id', 'text', notNull)
    .addColumn('name', 'text', notNull)
    .addColumn('email', 'text', notNull)
    .addColumn('total_earned', bigint, notNull)
    .addColumn('commission_rate', bigint, notNull)
    .addColumn('commission', bigint, notNull)
    .addColumn('created_at', time, notNull)
    .execute();
  await db.schema.createIndex('sales_list').on('sales').columns(['program_id', 'created_at', 'id']).execute();
  await db.schema.createIndex('sales_referral').on('sales').columns(['referral_id']).execute();
  await db.schema.createIndex('sales_affiliate').on('sales').columns(['affiliate_id', 'created_at', 'id']).execute();

  await db.schema
    .createTable('events')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('program_id', uuid, programRef)
    .addColumn('type', 'text', notNull)
    .addColumn('data', 'text', notNull)
    .addColumn('created_at', time, notNull)
    .execute();
  await db.schema.createIndex('events_list').on('events').columns(['program_id', 'created_at', 'id']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['events', 'sales', 'referrals', 'promotional_codes', 'coupons', 'affiliate_links', 'affiliates', 'api_tokens', 'programs', 'users']) {
    await db.schema.dropTable(table).execute();
  }
}
