import { sql, type Kysely, type SelectQueryBuilder } from 'kysely';
import { dialectOf } from './dialect.ts';
import type { Db, Tx } from './transaction.ts';

// The dashboard's "contains" searches at scale (issue 31). A list's search is `lower(column)
// like '%text%'`, which no B-tree index serves. Each dialect has a substring index instead:
// PostgreSQL's pg_trgm GIN indexes serve that same `like` (its planner picks them when they
// pay), SQLite's FTS5 trigram tables serve a phrase query the repository drives the read from
// (sales: migration 2026-12-03T0600; referrals and affiliates: 2026-12-03T1200). The index only
// narrows: each row it finds is still tested by the `like`, so both reads give the same answers.
// Counts stop at SEARCH_COUNT_CAP, so a search matching most of a big program costs what a search
// matching ten thousand does.

/**
 * The shortest search the lists take: a trigram index finds nothing shorter, so a shorter text
 * would read every row of the program (seconds for a million sales).
 */
export const SEARCH_MIN_CHARACTERS = 3;

/** Past this many matches a search's totals say "more than" instead of adding them up. */
export const SEARCH_COUNT_CAP = 10_000;

/** A filter's search text, or undefined when it has none (absent or blank). */
export const searchTextOf = (search: string | undefined): string | undefined => (search !== undefined && search.trim() !== '' ? search : undefined);

/**
 * The search text as an FTS5 phrase for a trigram table (every character literal), or
 * undefined when it is under 3 characters: a trigram index finds nothing shorter.
 */
export function trigramPhrase(text: string): string | undefined {
  const trimmed = text.trim();
  if ([...trimmed].length < SEARCH_MIN_CHARACTERS) return undefined;
  return `"${trimmed.replaceAll('"', '""')}"`;
}

/** How many rows a query finds, counting no further than `cap` + 1 (more than the cap: cap + 1). */
export async function countUpTo<DB, TB extends keyof DB, O>(db: Db, query: SelectQueryBuilder<DB, TB, O>, cap: number = SEARCH_COUNT_CAP): Promise<number> {
  const limited = query.clearSelect().clearOrderBy().select(sql`1`.as('one')).limit(cap + 1);
  const { rows } = await sql<{ n: number | string }>`select count(*) as n from (${limited}) as matches`.execute(db);
  return Number(rows[0]!.n);
}

/** How many rows a filtered list holds: exactly, or more than a cap (counted no further). */
export type MatchCount = number | { moreThan: number };

/** How many rows a query finds, or past `cap` only that there are more (one statement, at most cap + 1 rows read). */
export async function countMatching<DB, TB extends keyof DB, O>(db: Db, query: SelectQueryBuilder<DB, TB, O>, cap: number = SEARCH_COUNT_CAP): Promise<MatchCount> {
  const count = await countUpTo(db, query, cap);
  return count > cap ? { moreThan: cap } : count;
}

/**
 * SQLite's trigram tables: the list each indexes, the list's column its rowid holds, and (for
 * the lists with text ids, indexed by their implicit rowid) the texts indexed, as the triggers of
 * migration 2026-12-03T1200 write them.
 */
const TRIGRAM_TABLES = {
  sales: { index: 'sales_search', rowid: 'id', texts: undefined },
  referrals: { index: 'referrals_search', rowid: 'rowid', texts: sql`name, email_key` },
  affiliates: { index: 'affiliates_search', rowid: 'rowid', texts: sql`first_name || ' ' || last_name, email_key` },
} as const;

/**
 * Indexes the lists kept by implicit rowid again, after a full VACUUM (which may renumber a
 * table's implicit rowids; `tandem vacuum`, db/upkeep.ts): emptied, then filled from the lists,
 * in one transaction.
 */
export async function reindexRowidSearchTables(db: Kysely<unknown>): Promise<void> {
  await db.transaction().execute(async (tx) => {
    for (const [list, { index, texts }] of Object.entries(TRIGRAM_TABLES)) {
      if (texts === undefined) continue;
      const table = sql.table(index);
      await sql`insert into ${table} (${table}) values ('delete-all')`.execute(tx);
      await sql`insert into ${table} (rowid, name, email) select rowid, ${texts} from ${sql.table(list)}`.execute(tx);
    }
  });
}

export type SearchedList = keyof typeof TRIGRAM_TABLES;

/**
 * How a search reads: `like` on the list (PostgreSQL's trigram indexes serve it; on SQLite it
 * walks the list), or from SQLite's trigram table outward, each match's row looked up by rowid.
 */
export type SearchRead = 'like' | 'trigram-table';

/**
 * `from list as alias`, only the rows whose indexed name or e-mail holds `phrase`, read from the
 * trigram table outward: a CROSS JOIN, which SQLite never reorders — left to choose, it walks the
 * program's list index and tests each row against the matches (70 ms for one customer among a
 * million sales, not 1).
 */
function fromTrigramTable(db: Db | Tx, list: SearchedList, alias: string, phrase: string) {
  const { index, rowid } = TRIGRAM_TABLES[list];
  return db
    .selectFrom(sql<{ rowid: number }>`${sql.table(index)}`.as('f'))
    .crossJoin(sql`${sql.table(list)}`.as(alias))
    .where(sql<boolean>`${sql.ref(`f.${index}`)} match ${phrase} and ${sql.ref(`${alias}.${rowid}`)} = f.rowid`);
}

/**
 * `all` (the list's `db.selectFrom('list as alias')`) or, when a search reads the trigram table,
 * the same rows read from it outward (fromTrigramTable): only `alias` is named after it either way.
 */
export function searchedFrom<Q>(db: Db | Tx, list: SearchedList, alias: string, all: Q, search: string | undefined, read: SearchRead): Q {
  const phrase = read === 'trigram-table' && search !== undefined ? trigramPhrase(search) : undefined;
  return phrase === undefined ? all : (fromTrigramTable(db, list, alias, phrase) as unknown as Q);
}

/**
 * How a search of `search` in `list` reads on SQLite: through the trigram table when the text is
 * long enough for it and the table holds at most `cap` rows matching it, in every program (counted
 * no further; each is then looked up); past that the list walk, which finds a page of a common
 * text within a few hundred rows and reads no other program's. PostgreSQL's planner chooses
 * between its trigram indexes and the list by itself.
 */
export async function searchReadOf(db: Db, list: SearchedList, search: string | undefined, cap: number = SEARCH_COUNT_CAP): Promise<SearchRead> {
  const phrase = search === undefined ? undefined : trigramPhrase(search);
  if (dialectOf(db) !== 'sqlite' || phrase === undefined) return 'like';
  const index = sql.table(TRIGRAM_TABLES[list].index);
  const { rows } = await sql<{ n: number }>`select count(*) as n from (select 1 from ${index} where ${index} match ${phrase} limit ${cap + 1})`.execute(db);
  return Number(rows[0]!.n) <= cap ? 'trigram-table' : 'like';
}
