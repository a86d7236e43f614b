import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.ts';

// PostgreSQL's trigram indexes (2026-12-03T0600 and T1200) without GIN's pending list (issue 31).
// By default a GIN index takes new rows into an unsorted list of up to 4 MB that every search
// reads whole before the index proper: after a million sales, 460 pages of it on each search of
// the sales (a third of its time). With `fastupdate` off each insert goes into the index itself,
// which cost ~50 µs a row per index (measured: 5,000 e-mails into a trigram index of a million);
// the list already held is moved into the index here. SQLite: nothing (FTS5 has no such list).

const TRIGRAM_INDEXES = [
  'sales_name_trigrams',
  'sales_email_trigrams',
  'referrals_name_trigrams',
  'referrals_email_trigrams',
  'affiliates_name_trigrams',
  'affiliates_email_trigrams',
];

async function existing(db: Kysely<unknown>): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`select indexname as name from pg_indexes where schemaname = current_schema() and indexname in (${sql.join(TRIGRAM_INDEXES)})`.execute(db);
  return rows.map((row) => row.name);
}

export async function up(db: Kysely<unknown>): Promise<void> {
  if (dialectOf(db) !== 'postgres') return;
  for (const name of await existing(db)) {
    await sql`alter index ${sql.ref(name)} set (fastupdate = off)`.execute(db);
    await sql`select gin_clean_pending_list(${name}::regclass)`.execute(db);
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (dialectOf(db) !== 'postgres') return;
  for (const name of await existing(db)) await sql`alter index ${sql.ref(name)} reset (fastupdate)`.execute(db);
}
