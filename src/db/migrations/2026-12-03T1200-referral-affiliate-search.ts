import { sql, type Kysely, type RawBuilder } from 'kysely';
import { dialectOf } from '../dialect.ts';

// The referrals' and affiliates' searches through an index (issue 31), as the sales' got one in
// 2026-12-03T0600 (which says why each dialect's index is what it is). "Name or e-mail contains"
// read a program's referrals newest first until a page matched, and counted every match: a text
// nobody has read all of a million referrals, twice.
//
// SQLite: `referrals_search` and `affiliates_search`, contentless FTS5 trigram tables kept by
// triggers. Their rowid is the row's own: referrals and affiliates have text ids, so it is the
// table's implicit rowid, which SQLite keeps for a row's life (only a full VACUUM may renumber
// it: `tandem vacuum` indexes both tables again after one, db/upkeep.ts). A search checks each
// match against the row itself as well, so an index out of step could only miss, never mislead.
// The affiliate's name is indexed as the search reads it, first and last name with a space.
//
// PostgreSQL: trigram GIN indexes on what the searches' `like` reads, when pg_trgm exists (the
// sales' migration created it where it could; without it the searches stay unindexed).
//
// Both: referrals (program, status, created_at, id), so the list filtered by a status walks only
// that status's rows in list order, and its count stops at the cap within them (counting the
// inactive referrals of a program that has none read all of its million active ones).

interface SearchedTable {
  table: 'referrals' | 'affiliates';
  index: 'referrals_search' | 'affiliates_search';
  /** The indexed texts, as SQL over the table's row `row` (`new`, `old` or the table itself). */
  name: (row: string) => RawBuilder<string>;
  /** The columns whose change moves the index. */
  columns: string[];
}

const SEARCHED: SearchedTable[] = [
  { table: 'referrals', index: 'referrals_search', name: (row) => sql`${sql.ref(`${row}.name`)}`, columns: ['name', 'email_key'] },
  {
    table: 'affiliates',
    index: 'affiliates_search',
    name: (row) => sql`${sql.ref(`${row}.first_name`)} || ' ' || ${sql.ref(`${row}.last_name`)}`,
    columns: ['first_name', 'last_name', 'email_key'],
  },
];

const PG_INDEXES = [
  sql`create index referrals_name_trigrams on referrals using gin (lower(name) gin_trgm_ops)`,
  sql`create index referrals_email_trigrams on referrals using gin (email_key gin_trgm_ops)`,
  sql`create index affiliates_name_trigrams on affiliates using gin (lower(first_name || ' ' || last_name) gin_trgm_ops)`,
  sql`create index affiliates_email_trigrams on affiliates using gin (email_key gin_trgm_ops)`,
];
const PG_INDEX_NAMES = ['referrals_name_trigrams', 'referrals_email_trigrams', 'affiliates_name_trigrams', 'affiliates_email_trigrams'];

function triggersOf({ table, index, name, columns }: SearchedTable): RawBuilder<unknown>[] {
  const changed = sql.join(columns.map((column) => sql`${sql.ref(`old.${column}`)} is not ${sql.ref(`new.${column}`)}`), sql` or `);
  return [
    sql`create trigger ${sql.ref(`${index}_insert`)} after insert on ${sql.table(table)} begin
      insert into ${sql.table(index)} (rowid, name, email) values (new.rowid, ${name('new')}, new.email_key);
    end`,
    sql`create trigger ${sql.ref(`${index}_update`)} after update of ${sql.join(columns.map((column) => sql.ref(column)))} on ${sql.table(table)}
      when ${changed} begin
      update ${sql.table(index)} set name = ${name('new')}, email = new.email_key where rowid = new.rowid;
    end`,
    sql`create trigger ${sql.ref(`${index}_delete`)} after delete on ${sql.table(table)} begin
      delete from ${sql.table(index)} where rowid = old.rowid;
    end`,
  ];
}

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.createIndex('referrals_status_list').on('referrals').columns(['program_id', 'status', 'created_at', 'id']).execute();
  if (dialectOf(db) === 'postgres') {
    const trigrams = await sql`select 1 from pg_extension where extname = 'pg_trgm'`.execute(db);
    if (trigrams.rows.length === 0) return;
    for (const index of PG_INDEXES) await index.execute(db);
    return;
  }
  for (const searched of SEARCHED) {
    await sql`create virtual table ${sql.table(searched.index)} using fts5(name, email, content = '', contentless_delete = 1, tokenize = 'trigram')`.execute(db);
    await sql`insert into ${sql.table(searched.index)} (rowid, name, email) select rowid, ${searched.name(searched.table)}, email_key from ${sql.table(searched.table)}`.execute(db);
    for (const trigger of triggersOf(searched)) await trigger.execute(db);
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('referrals_status_list').execute();
  if (dialectOf(db) === 'postgres') {
    for (const name of PG_INDEX_NAMES) await sql`drop index if exists ${sql.ref(name)}`.execute(db);
    return;
  }
  for (const { index } of [...SEARCHED].reverse()) {
    for (const kind of ['delete', 'update', 'insert']) await sql`drop trigger ${sql.ref(`${index}_${kind}`)}`.execute(db);
    await sql`drop table ${sql.table(index)}`.execute(db);
  }
}
