import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.ts';

// A program's affiliates, counted and kept (issue 31): the dashboard's list said how many
// affiliates match, and the overview how many the program has, by counting every affiliate row
// of the program at each view (100,000 rows for a big one, 45 ms on SQLite). affiliate_counts
// holds, per program, shard and status, how many affiliates there are; every write that adds,
// removes or changes the status of an affiliate moves it in the same transaction (the affiliates
// module's addToAffiliateCounts), so the readers sum at most 32 rows instead. The shard is the
// first hex digit of the affiliate's id, as in sale_days: concurrent sign-ups of one program
// rarely update the same row (one row per program and status would make every new affiliate of a
// program wait for the one before it on PostgreSQL). The rows are filled here from the
// affiliates already stored.

export async function up(db: Kysely<unknown>): Promise<void> {
  const pg = dialectOf(db) === 'postgres';
  const uuid = pg ? sql`uuid` : sql`text`;
  const bigint = pg ? sql`bigint` : sql`integer`;
  await db.schema
    .createTable('affiliate_counts')
    .addColumn('program_id', uuid, (c) => c.notNull().references('programs.id').onDelete('cascade'))
    .addColumn('shard', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('affiliates', bigint, (c) => c.notNull())
    .addPrimaryKeyConstraint('affiliate_counts_key', ['program_id', 'shard', 'status'])
    // SQLite: the rows live in their key's order, so a program's are one range of the table.
    .$call((table) => (pg ? table : table.modifyEnd(sql`without rowid`)))
    .execute();
  const shard = pg ? sql`left(id::text, 1)` : sql`substr(id, 1, 1)`;
  await sql`
    insert into affiliate_counts (program_id, shard, status, affiliates)
    select program_id, ${shard}, status, count(*)
    from affiliates group by program_id, ${shard}, status`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('affiliate_counts').execute();
}
