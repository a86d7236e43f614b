import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.ts';

// Commission plans, the commission ledger and payouts (docs/payouts.md).
// - programs get their plan: percentage or flat, how long and how many sales of a customer
//   earn, the hold before a commission can be paid, the smallest payout;
// - a sale keeps the rule it was recorded under (a later plan change rewrites nothing);
// - commission_entries is the ledger: every change of what an affiliate earns, appended in the
//   transaction of the change; an entry's amount never changes, only its payout and paid time;
// - payouts hold exactly their entries; amount and recipient are frozen when made.
// Existing sales and refunds get their entries here, so the ledger's sums equal the counters
// from the first start: a `sale` entry per sale (its commission), a `refund` entry per refund,
// and an `adjustment` where an edit of the sale recomputed the commission taken back.
export async function up(db: Kysely<unknown>): Promise<void> {
  const pg = dialectOf(db) === 'postgres';
  const uuid = pg ? sql`uuid` : sql`text`;
  const time = pg ? sql`timestamptz(3)` : sql`text`;
  const bigint = pg ? sql`bigint` : sql`integer`;

  await db.schema.alterTable('programs').addColumn('commission_type', 'text', (c) => c.notNull().defaultTo('percentage')).execute();
  await db.schema.alterTable('programs').addColumn('commission_amount', bigint, (c) => c.notNull().defaultTo(0)).execute();
  await db.schema.alterTable('programs').addColumn('commission_duration_months', 'integer').execute();
  await db.schema.alterTable('programs').addColumn('max_sales_per_customer', 'integer').execute();
  await db.schema.alterTable('programs').addColumn('hold_days', 'integer', (c) => c.notNull().defaultTo(30)).execute();
  await db.schema.alterTable('programs').addColumn('minimum_payout', bigint, (c) => c.notNull().defaultTo(0)).execute();

  // 'percentage' (commission_rate), 'flat' (commission_flat, at most the total) or 'none' (outside the plan).
  await db.schema.alterTable('sales').addColumn('commission_rule', 'text', (c) => c.notNull().defaultTo('percentage')).execute();
  await db.schema.alterTable('sales').addColumn('commission_flat', bigint, (c) => c.notNull().defaultTo(0)).execute();

  await db.schema
    .createTable('payouts')
    .addColumn('id', uuid, (c) => c.primaryKey())
    .addColumn('program_id', uuid, (c) => c.notNull().references('programs.id').onDelete('cascade'))
    // No foreign key: a payout is a record of money and outlives a deleted affiliate.
    .addColumn('affiliate_id', uuid, (c) => c.notNull())
    .addColumn('first_name', 'text', (c) => c.notNull())
    .addColumn('last_name', 'text', (c) => c.notNull())
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('payout_email', 'text', (c) => c.notNull())
    .addColumn('payment_method', 'text', (c) => c.notNull())
    .addColumn('amount', bigint, (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('entry_count', 'integer', (c) => c.notNull())
    .addColumn('created_at', time, (c) => c.notNull())
    .addColumn('paid_at', time)
    .addColumn('method', 'text')
    .addColumn('reference', 'text')
    .addColumn('updated_at', time, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('payouts_program_created').on('payouts').columns(['program_id', 'created_at', 'id']).execute();
  await db.schema.createIndex('payouts_affiliate').on('payouts').columns(['program_id', 'affiliate_id', 'created_at']).execute();

  await db.schema
    .createTable('commission_entries')
    .addColumn('id', bigint, (c) => (pg ? c.primaryKey().generatedByDefaultAsIdentity() : c.primaryKey().autoIncrement()))
    .addColumn('program_id', uuid, (c) => c.notNull().references('programs.id').onDelete('cascade'))
    // No foreign keys to the affiliate or the sale: the ledger keeps what a deleted record earned and lost.
    .addColumn('affiliate_id', uuid, (c) => c.notNull())
    .addColumn('sale_id', bigint)
    .addColumn('payout_id', uuid, (c) => c.references('payouts.id'))
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('amount', bigint, (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('due_at', time, (c) => c.notNull())
    .addColumn('paid_at', time)
    .addColumn('created_at', time, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('commission_entries_program_created').on('commission_entries').columns(['program_id', 'created_at', 'id']).execute();
  await db.schema.createIndex('commission_entries_affiliate').on('commission_entries').columns(['program_id', 'affiliate_id', 'due_at']).execute();
  await db.schema.createIndex('commission_entries_sale').on('commission_entries').columns(['sale_id']).execute();
  await db.schema.createIndex('commission_entries_payout').on('commission_entries').columns(['payout_id']).execute();
  // What a payout run reads: the unpaid entries outside any payout, by program and due time.
  await db.schema
    .createIndex('commission_entries_open')
    .on('commission_entries')
    .columns(['program_id', 'due_at'])
    .where(sql.ref('payout_id'), 'is', null)
    .execute();

  // The entries of what is already stored (default hold of 30 days; no payout has been made).
  const plusHold = (column: string) => (pg ? sql`${sql.ref(column)} + interval '30 days'` : sql`strftime('%Y-%m-%dT%H:%M:%fZ', ${sql.ref(column)}, '+30 days')`);
  await sql`
    insert into commission_entries (program_id, affiliate_id, sale_id, kind, amount, currency, due_at, created_at)
    select s.program_id, s.affiliate_id, s.id, 'sale', s.commission, p.currency, ${plusHold('s.created_at')}, s.created_at
    from sales s join programs p on p.id = s.program_id
    order by s.id`.execute(db);
  await sql`
    insert into commission_entries (program_id, affiliate_id, sale_id, kind, amount, currency, due_at, created_at)
    select s.program_id, s.affiliate_id, s.id, 'refund', -r.commission, p.currency, ${plusHold('s.created_at')}, r.created_at
    from sale_refunds r join sales s on s.id = r.sale_id join programs p on p.id = s.program_id
    order by r.created_at, r.id`.execute(db);
  // An edit after a refund recomputed the commission taken back; the difference is an adjustment.
  await sql`
    insert into commission_entries (program_id, affiliate_id, sale_id, kind, amount, currency, due_at, created_at)
    select s.program_id, s.affiliate_id, s.id, 'adjustment', t.refunded - s.refunded_commission, p.currency, ${plusHold('s.created_at')}, coalesce(s.updated_at, s.created_at)
    from sales s
    join programs p on p.id = s.program_id
    join (select sale_id, sum(commission) as refunded from sale_refunds group by sale_id) t on t.sale_id = s.id
    where t.refunded <> s.refunded_commission
    order by s.id`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('commission_entries').execute();
  await db.schema.dropTable('payouts').execute();
  for (const column of ['commission_flat', 'commission_rule']) await db.schema.alterTable('sales').dropColumn(column).execute();
  for (const column of ['minimum_payout', 'hold_days', 'max_sales_per_customer', 'commission_duration_months', 'commission_amount', 'commission_type']) {
    await db.schema.alterTable('programs').dropColumn(column).execute();
  }
}
