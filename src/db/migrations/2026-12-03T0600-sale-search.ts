import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.ts';

// The dashboard's sales search through an index (issue 31): "name or e-mail contains" read every
// sale of the program newest first until a page matched — seconds for a rare customer among a
// million sales. Each dialect gets the substring index it has (db/text-search.ts reads them):
//
// SQLite: `sales_search`, an FTS5 table with the trigram tokenizer over each sale's name and
// e-mail, its rowid the sale's id. Contentless (the text stays in `sales` only) with
// contentless_delete, kept by triggers so every write path — inserts, edits, the cascades of
// an affiliate's or a program's deletion — moves it in the sale's own transaction.
//
// PostgreSQL: trigram GIN indexes on lower(name) and lower(email), which serve the same
// `lower(…) like '%…%'` the search always ran. They need the pg_trgm extension (shipped with
// PostgreSQL; trusted since 13, so a database owner may create it). Where it cannot be
// created the migration leaves the search unindexed — same answers, read by scanning — rather
// than refusing to start; docs/deploy.md says how to add it later.

const SQLITE_TRIGGERS = {
  sales_search_insert: sql`create trigger sales_search_insert after insert on sales begin
    insert into sales_search (rowid, name, email) values (new.id, new.name, new.email);
  end`,
  sales_search_update: sql`create trigger sales_search_update after update of name, email on sales
    when old.name is not new.name or old.email is not new.email begin
    update sales_search set name = new.name, email = new.email where rowid = new.id;
  end`,
  sales_search_delete: sql`create trigger sales_search_delete after delete on sales begin
    delete from sales_search where rowid = old.id;
  end`,
};

export async function up(db: Kysely<unknown>): Promise<void> {
  if (dialectOf(db) === 'postgres') {
    if (!(await createTrigramExtension(db))) return;
    await sql`create index sales_name_trigrams on sales using gin (lower(name) gin_trgm_ops)`.execute(db);
    await sql`create index sales_email_trigrams on sales using gin (lower(email) gin_trgm_ops)`.execute(db);
    return;
  }
  await sql`create virtual table sales_search using fts5(name, email, content = '', contentless_delete = 1, tokenize = 'trigram')`.execute(db);
  await sql`insert into sales_search (rowid, name, email) select id, name, email from sales`.execute(db);
  for (const trigger of Object.values(SQLITE_TRIGGERS)) await trigger.execute(db);
}

/** Creates pg_trgm unless it exists; false when this database user may not (the search then scans). */
async function createTrigramExtension(db: Kysely<unknown>): Promise<boolean> {
  // A savepoint, so a refusal does not abort the migration's transaction.
  await sql`savepoint trigram_extension`.execute(db);
  try {
    await sql`create extension if not exists pg_trgm`.execute(db);
    await sql`release savepoint trigram_extension`.execute(db);
    return true;
  } catch {
    await sql`rollback to savepoint trigram_extension`.execute(db);
    return false;
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (dialectOf(db) === 'postgres') {
    await sql`drop index if exists sales_email_trigrams`.execute(db);
    await sql`drop index if exists sales_name_trigrams`.execute(db);
    return;
  }
  for (const name of Object.keys(SQLITE_TRIGGERS).reverse()) await sql`drop trigger ${sql.ref(name)}`.execute(db);
  await sql`drop table sales_search`.execute(db);
}
