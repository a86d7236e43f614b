import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.ts';

// Clicks per link and UTC day, kept with each counted click, so the raw click rows can be
// purged after a retention period while every daily figure stays. Filled from the clicks
// already stored. Plus an index on the clicks' day for the worker's purge.
export async function up(db: Kysely<unknown>): Promise<void> {
  const pg = dialectOf(db) === 'postgres';
  const uuid = pg ? sql`uuid` : sql`text`;
  const bigint = pg ? sql`bigint` : sql`integer`;

  await db.schema
    .createTable('click_days')
    .addColumn('id', uuid, (c) => c.primaryKey())
    .addColumn('program_id', uuid, (c) => c.notNull().references('programs.id').onDelete('cascade'))
    .addColumn('affiliate_id', uuid, (c) => c.notNull().references('affiliates.id').onDelete('cascade'))
    // A deleted link leaves its days with the affiliate, as it leaves its clicks.
    .addColumn('link_id', uuid, (c) => c.references('affiliate_links.id').onDelete('set null'))
    /** The UTC day, YYYY-MM-DD. */
    .addColumn('day', 'text', (c) => c.notNull())
    .addColumn('clicks', bigint, (c) => c.notNull())
    .execute();
  // One row per link and day (the counted click's upsert); rows whose link was deleted hold null and never collide.
  await db.schema.createIndex('click_days_link_day').unique().on('click_days').columns(['link_id', 'day']).execute();
  await db.schema.createIndex('click_days_program_day').on('click_days').columns(['program_id', 'day']).execute();
  await db.schema.createIndex('click_days_affiliate').on('click_days').column('affiliate_id').execute();

  // One group per link (or per affiliate's deleted links) and day. SQLite has no uuid
  // function: the group's smallest click id is a unique id already.
  const id = pg ? sql`gen_random_uuid()` : sql`min(id)`;
  await sql`
    insert into click_days (id, program_id, affiliate_id, link_id, day, clicks)
    select ${id}, program_id, affiliate_id, link_id, day, count(*)
    from clicks
    group by program_id, affiliate_id, link_id, day`.execute(db);

  await db.schema.createIndex('clicks_day').on('clicks').column('day').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('clicks_day').execute();
  await db.schema.dropTable('click_days').execute();
}
