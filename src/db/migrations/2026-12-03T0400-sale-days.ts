import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.ts';

// A program's sales by UTC day, kept (issue 31): the overview's all-time totals, its chart and
// the sales list's totals summed every sale of the program (a million rows for a big one) at
// each view. sale_days holds, per program, day of the sale and shard, the count of its sales,
// their amounts, what was refunded of them and their commission net of refunds; every write that changes what sales add up
// to moves it in the same transaction (ledger/counters.ts, the ledger's statements), so the
// readers sum a few rows per day instead. The shard is the first hex digit of the credited
// affiliate's id: two concurrent sales of different affiliates rarely update the same row (a
// sale already takes its affiliate's row; one row per program and day would make every sale of
// a program wait for the one before it on PostgreSQL). The rows are filled here from the sales
// already stored.

export async function up(db: Kysely<unknown>): Promise<void> {
  const pg = dialectOf(db) === 'postgres';
  const uuid = pg ? sql`uuid` : sql`text`;
  const bigint = pg ? sql`bigint` : sql`integer`;
  await db.schema
    .createTable('sale_days')
    .addColumn('program_id', uuid, (c) => c.notNull().references('programs.id').onDelete('cascade'))
    .addColumn('day', 'text', (c) => c.notNull())
    .addColumn('shard', 'text', (c) => c.notNull())
    .addColumn('sales', bigint, (c) => c.notNull())
    .addColumn('amount', bigint, (c) => c.notNull())
    .addColumn('refunded', bigint, (c) => c.notNull())
    .addColumn('commission', bigint, (c) => c.notNull())
    .addPrimaryKeyConstraint('sale_days_key', ['program_id', 'day', 'shard'])
    .execute();
  const day = pg ? sql`to_char(created_at at time zone 'UTC', 'YYYY-MM-DD')` : sql`substr(created_at, 1, 10)`;
  const shard = pg ? sql`left(affiliate_id::text, 1)` : sql`substr(affiliate_id, 1, 1)`;
  await sql`
    insert into sale_days (program_id, day, shard, sales, amount, refunded, commission)
    select program_id, ${day}, ${shard}, count(*), sum(total_earned), sum(refunded_amount), sum(commission - refunded_commission)
    from sales group by program_id, ${day}, ${shard}`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('sale_days').execute();
}
