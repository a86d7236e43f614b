import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.ts';

// What an affiliate's sales add up to, kept on its row (issue 31): the sales list filtered by
// one affiliate showed its totals (count, amount, refunded, commission after refunds) by summing
// every sale of the affiliate — 10,000 rows for a big affiliate at each view. Its row already
// keeps totalCommissionEarned, moved by every sale, edit, refund and void in the same
// transaction (ledger/counters.ts); it now keeps the count, the amount and the refunds beside
// it, moved by the same statements. Filled here from the sales already stored.

const COLUMNS = ['number_of_sales', 'total_sales_amount', 'total_refunded_amount'] as const;

export async function up(db: Kysely<unknown>): Promise<void> {
  const bigint = dialectOf(db) === 'postgres' ? sql`bigint` : sql`integer`;
  for (const column of COLUMNS) await db.schema.alterTable('affiliates').addColumn(column, bigint, (c) => c.notNull().defaultTo(0)).execute();
  await sql`
    update affiliates set number_of_sales = t.sales, total_sales_amount = t.amount, total_refunded_amount = t.refunded
    from (select affiliate_id, count(*) as sales, sum(total_earned) as amount, sum(refunded_amount) as refunded from sales group by affiliate_id) as t
    where t.affiliate_id = affiliates.id`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const column of [...COLUMNS].reverse()) await db.schema.alterTable('affiliates').dropColumn(column).execute();
}
