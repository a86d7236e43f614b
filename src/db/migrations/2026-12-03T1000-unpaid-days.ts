import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.ts';

// A program's unpaid commission, kept by the day it falls due (issue 31): the payouts page's
// balance (pending, held, due, due outside payouts, paid) summed every unpaid entry of the
// program at each view — 110,000 for the scale bench's program of a million sales (45 ms on
// SQLite, 65 on PostgreSQL), a number that grows with the program's monthly volume. unpaid_days
// holds, per program, UTC day of the entries' due_at, shard (the first hex digit of the
// affiliate's id, as sale_days: concurrent sales of different affiliates rarely share a row),
// whether they are held and whether a payout holds them, the sum of their amounts; every write
// of the ledger that adds an unpaid entry or changes one's due date, hold, payout or paid state
// moves it in the same transaction (ledger.repository.ts). A balance sums those rows for the
// days before and after today, and reads today's entries themselves (their due times split at
// now) through commission_entries_unpaid_due. Filled here from the unpaid entries stored.

export async function up(db: Kysely<unknown>): Promise<void> {
  const pg = dialectOf(db) === 'postgres';
  const uuid = pg ? sql`uuid` : sql`text`;
  const bigint = pg ? sql`bigint` : sql`integer`;
  let table = db.schema
    .createTable('unpaid_days')
    .addColumn('program_id', uuid, (c) => c.notNull().references('programs.id').onDelete('cascade'))
    .addColumn('due_day', 'text', (c) => c.notNull())
    .addColumn('shard', 'text', (c) => c.notNull())
    .addColumn('held', 'integer', (c) => c.notNull())
    .addColumn('in_payout', 'integer', (c) => c.notNull())
    .addColumn('amount', bigint, (c) => c.notNull())
    .addPrimaryKeyConstraint('unpaid_days_key', ['program_id', 'due_day', 'shard', 'held', 'in_payout']);
  // SQLite: the key is the table's order, so a program's rows are one range of it (as affiliate_counts).
  if (!pg) table = table.modifyEnd(sql`without rowid`);
  await table.execute();
  await db.schema.createIndex('commission_entries_unpaid_due').on('commission_entries').columns(['program_id', 'due_at']).where(sql.ref('paid_at'), 'is', null).execute();
  const day = pg ? sql`to_char(due_at at time zone 'UTC', 'YYYY-MM-DD')` : sql`substr(due_at, 1, 10)`;
  const shard = pg ? sql`left(affiliate_id::text, 1)` : sql`substr(affiliate_id, 1, 1)`;
  const held = sql`case when held_by is null then 0 else 1 end`;
  const inPayout = sql`case when payout_id is null then 0 else 1 end`;
  await sql`
    insert into unpaid_days (program_id, due_day, shard, held, in_payout, amount)
    select program_id, ${day}, ${shard}, ${held}, ${inPayout}, sum(amount)
    from commission_entries where paid_at is null
    group by program_id, ${day}, ${shard}, ${held}, ${inPayout}`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('commission_entries_unpaid_due').execute();
  await db.schema.dropTable('unpaid_days').execute();
}
