import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.ts';

// Click tracking: each counted click is a row (one per visitor, link and UTC day, kept unique
// by the database so a burst of reloads counts once), and the program's cookie window and
// attribution rule for the tracking script.
export async function up(db: Kysely<unknown>): Promise<void> {
  const pg = dialectOf(db) === 'postgres';
  const uuid = pg ? sql`uuid` : sql`text`;
  const time = pg ? sql`timestamptz(3)` : sql`text`;

  await db.schema.alterTable('programs').addColumn('cookie_days', 'integer', (c) => c.notNull().defaultTo(60)).execute();
  await db.schema.alterTable('programs').addColumn('attribution', 'text', (c) => c.notNull().defaultTo('last')).execute();

  await db.schema
    .createTable('clicks')
    .addColumn('id', uuid, (c) => c.primaryKey())
    .addColumn('program_id', uuid, (c) => c.notNull().references('programs.id').onDelete('cascade'))
    .addColumn('affiliate_id', uuid, (c) => c.notNull().references('affiliates.id').onDelete('cascade'))
    // A deleted link leaves its clicks with the affiliate, like its referrals and sales.
    .addColumn('link_id', uuid, (c) => c.references('affiliate_links.id').onDelete('set null'))
    /** SHA-256 of the visitor (the script's random id, else address and user agent). */
    .addColumn('visitor_key', 'text', (c) => c.notNull())
    /** The UTC day, YYYY-MM-DD: one click per visitor, link and day. */
    .addColumn('day', 'text', (c) => c.notNull())
    .addColumn('landing_url', 'text', (c) => c.notNull())
    .addColumn('created_at', time, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('clicks_once_a_day').unique().on('clicks').columns(['link_id', 'visitor_key', 'day']).execute();
  await db.schema.createIndex('clicks_program_day').on('clicks').columns(['program_id', 'day']).execute();
  await db.schema.createIndex('clicks_affiliate').on('clicks').columns(['affiliate_id', 'day']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('clicks').execute();
  await db.schema.alterTable('programs').dropColumn('attribution').execute();
  await db.schema.alterTable('programs').dropColumn('cookie_days').execute();
}
