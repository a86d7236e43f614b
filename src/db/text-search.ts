import { sql, type Kysely, type RawBuilder, type SelectQueryBuilder } from 'kysely';
import { dialectOf } from './dialect.ts';
import { likeContains } from './like.ts';
import type { Db, Tx } from './transaction.ts';

// The dashboard's "contains" searches at scale (issue 31). A list's search is `lower(column)
// like '%text%'`, which no B-tree index serves. Each dialect has a substring index instead:
// PostgreSQL's pg_trgm GIN indexes serve that same `like` (its planner picks them when they
// pay), SQLite's FTS5 trigram tables serve a phrase query the repository drives the read from
// (sales: migration 2026-12-03T0600; referrals and affiliates: 2026-12-03T1200). The index only
// narrows: each row it finds is still tested by the `like`, so both reads give the same answers.
// Counts stop at SEARCH_COUNT_CAP, so a search matching most of a big program costs what a search
// matching ten thousand does.
//
// PostgreSQL's GIN reads the whole posting list of every trigram of the text for each search,
// however rare the text: "customer777." among a million "customerN.b@customers.example.net" read
// 1,900 pages for its six trigrams every row holds (15 ms), "r777." 18 pages (0.2 ms); a search
// with "gmail.com" in it is the same. So the index is given only the longest piece of the text
// whose trigrams are not common in the list (a sample says which, indexedPieceOf), and the whole
// text is tested by `strpos`, which no index serves: the same rows, read through the rare part.

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

/** A list's row, as SQL: `alias.column`. */
const column = (alias: string, name: string) => sql.ref(`${alias}.${name}`);

/**
 * Per searched list: the texts a search reads, as SQL over the list's alias — exactly the
 * expressions PostgreSQL's trigram indexes hold, or they would not serve it —, SQLite's trigram
 * table, the list's column its rowid holds, and (for the lists with text ids, indexed by their
 * implicit rowid) the texts indexed, as the triggers of migration 2026-12-03T1200 write them.
 */
const TRIGRAM_TABLES = {
  sales: {
    searched: (a: string): RawBuilder<string>[] => [sql`lower(${column(a, 'name')})`, sql`lower(${column(a, 'email')})`],
    index: 'sales_search',
    rowid: 'id',
    texts: undefined,
  },
  referrals: {
    searched: (a: string): RawBuilder<string>[] => [sql`lower(${column(a, 'name')})`, sql`${column(a, 'email_key')}`],
    index: 'referrals_search',
    rowid: 'rowid',
    texts: sql`name, email_key`,
  },
  affiliates: {
    searched: (a: string): RawBuilder<string>[] => [sql`${column(a, 'email_key')}`, sql`lower(${column(a, 'first_name')} || ' ' || ${column(a, 'last_name')})`],
    index: 'affiliates_search',
    rowid: 'rowid',
    texts: sql`first_name || ' ' || last_name, email_key`,
  },
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
 * `indexedPiece` (PostgreSQL): the part of the text the index is given (indexedPieceOf).
 */
export interface SearchRead {
  via: 'like' | 'trigram-table';
  indexedPiece?: string;
}

/** A search's read when there is no search, or nothing better: the `like`. */
export const LIKE_READ: SearchRead = { via: 'like' };

/**
 * "One of the list's searched texts contains `search`" (ignoring case), for a query of `list as
 * alias`: the `like` each index serves, or with an indexed piece, the piece's `like` and the
 * whole text's `strpos` (every row holding the text holds the piece, so the answers are the same).
 */
export function searchCondition(list: SearchedList, alias: string, search: string, read: SearchRead): RawBuilder<boolean> {
  const texts = TRIGRAM_TABLES[list].searched(alias);
  const anyContains = (text: string) => {
    const pattern = likeContains(text);
    return sql.join(texts.map((text) => sql`${text} like ${pattern} escape '\\'`), sql` or `);
  };
  if (read.indexedPiece === undefined) return sql<boolean>`(${anyContains(search)})`;
  const whole = search.trim().toLowerCase();
  return sql<boolean>`(${anyContains(read.indexedPiece)}) and (${sql.join(texts.map((text) => sql`strpos(${text}, ${whole}) > 0`), sql` or `)})`;
}

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
  const phrase = read.via === 'trigram-table' && search !== undefined ? trigramPhrase(search) : undefined;
  return phrase === undefined ? all : (fromTrigramTable(db, list, alias, phrase) as unknown as Q);
}

/**
 * How a search of `search` in `list` reads. SQLite: through the trigram table when the text is
 * long enough for it and the table holds at most `cap` rows matching it, in every program (counted
 * no further; each is then looked up); past that the list walk, which finds a page of a common
 * text within a few hundred rows and reads no other program's. PostgreSQL: the planner chooses
 * between its trigram indexes and the list by itself; the index is given the text's rare piece.
 */
export async function searchReadOf(db: Db, list: SearchedList, search: string | undefined, cap: number = SEARCH_COUNT_CAP): Promise<SearchRead> {
  const phrase = search === undefined ? undefined : trigramPhrase(search);
  if (search === undefined || phrase === undefined) return LIKE_READ;
  if (dialectOf(db) === 'postgres') {
    const indexedPiece = indexedPieceOf(search.trim().toLowerCase(), await commonTrigramsOf(db, list));
    return indexedPiece === undefined ? LIKE_READ : { via: 'like', indexedPiece };
  }
  const index = sql.table(TRIGRAM_TABLES[list].index);
  const { rows } = await sql<{ n: number }>`select count(*) as n from (select 1 from ${index} where ${index} match ${phrase} limit ${cap + 1})`.execute(db);
  return Number(rows[0]!.n) <= cap ? { via: 'trigram-table' } : LIKE_READ;
}

// ---------------------------------------------------------------- PostgreSQL: the rare piece

/** A trigram in at least this share of a list's sampled rows is common: its posting list is long. */
const COMMON_TRIGRAM_SHARE = 0.05;
/** Rows sampled per list; fewer than TRIGRAM_SAMPLE_MIN_ROWS sampled: nothing is common (the list is small). */
const TRIGRAM_SAMPLE_ROWS = 2_000;
const TRIGRAM_SAMPLE_MIN_ROWS = 200;
/** How long a process keeps a list's sample before taking another (real time: a cache, not the app's clock). */
const TRIGRAM_SAMPLE_TTL_MS = 10 * 60_000;

/**
 * The trigrams pg_trgm reads from `like '%piece%'` (lower-case ASCII): each run of letters and
 * digits is a word, padded with two spaces before when a separator precedes it in the piece and
 * one after when one follows (at the piece's ends the `%` gives none), and cut in threes.
 */
export function likeTrigramsOf(piece: string): string[] {
  const trigrams: string[] = [];
  for (const match of piece.matchAll(/[a-z0-9]+/g)) {
    const start = match.index!;
    const end = start + match[0].length;
    const padded = `${start > 0 ? '  ' : ''}${match[0]}${end < piece.length ? ' ' : ''}`;
    for (let i = 0; i + 3 <= padded.length; i++) trigrams.push(padded.slice(i, i + 3));
  }
  return trigrams;
}

/**
 * The longest piece of `text` (trimmed, lower-case) none of whose trigrams is `common`, when the
 * whole text has a common one and such a piece has a trigram at all; else undefined (the whole
 * text is the index's). Text with other than ASCII characters: undefined (pg_trgm's words then
 * follow the database's locale, which this does not know).
 */
export function indexedPieceOf(text: string, common: ReadonlySet<string>): string | undefined {
  if (common.size === 0 || /[^\x20-\x7e]/.test(text)) return undefined;
  if (!likeTrigramsOf(text).some((trigram) => common.has(trigram))) return undefined;
  let best: string | undefined;
  let bestTrigrams = 0;
  for (let start = 0; start < text.length; start++) {
    for (let end = start + 1; end <= text.length; end++) {
      const trigrams = likeTrigramsOf(text.slice(start, end));
      // A longer piece from the same start holds every trigram of this one.
      if (trigrams.some((trigram) => common.has(trigram))) break;
      if (trigrams.length > bestTrigrams) [best, bestTrigrams] = [text.slice(start, end), trigrams.length];
    }
  }
  return best;
}

interface TrigramSample {
  takenAt: number;
  common: Promise<Set<string>>;
}

const trigramSamples = new WeakMap<object, Map<SearchedList, TrigramSample>>();

/**
 * The trigrams common in `list` (PostgreSQL with pg_trgm), from a sample of its rows (a few
 * thousand, whole pages: milliseconds) that each process keeps TRIGRAM_SAMPLE_TTL_MS. A failed
 * sample is an empty set: the search then gives the index the whole text, as before.
 */
export function commonTrigramsOf(db: Db, list: SearchedList): Promise<Set<string>> {
  let samples = trigramSamples.get(db);
  if (samples === undefined) trigramSamples.set(db, (samples = new Map()));
  const kept = samples.get(list);
  if (kept !== undefined && performance.now() - kept.takenAt < TRIGRAM_SAMPLE_TTL_MS) return kept.common;
  const common = sampleCommonTrigrams(db, list).catch(() => new Set<string>());
  samples.set(list, { takenAt: performance.now(), common });
  return common;
}

/** Forgets every sample `db`'s searches keep (a test, after changing a list). */
export function forgetTrigramSamples(db: Db): void {
  trigramSamples.delete(db);
}

async function sampleCommonTrigrams(db: Db, list: SearchedList): Promise<Set<string>> {
  const { rows: found } = await sql<{ show: string | null; rows: number | string | null }>`
    select to_regproc('show_trgm')::text as show, (select reltuples from pg_class where oid = to_regclass(${list})) as rows`.execute(db);
  if (found[0]?.show == null) return new Set();
  // TABLESAMPLE SYSTEM reads whole pages at random: twice the share wanted, then the limit.
  const estimated = Number(found[0].rows ?? -1);
  const percent = estimated > 0 ? Math.min(100, (200 * TRIGRAM_SAMPLE_ROWS) / estimated) : 100;
  const text = sql.join(TRIGRAM_TABLES[list].searched('x'), sql` || ' ' || `);
  const { rows } = await sql<{ trigram: string; sampled: number | string }>`
    with sampled as (select ${text} as text from ${sql.table(list)} as x tablesample system (${sql.lit(percent)}) limit ${TRIGRAM_SAMPLE_ROWS})
    select t as trigram, (select count(*) from sampled) as sampled
    from sampled, unnest(show_trgm(sampled.text)) as t
    group by t having count(*) >= ${sql.lit(COMMON_TRIGRAM_SHARE)} * (select count(*) from sampled)`.execute(db);
  if (rows.length === 0 || Number(rows[0]!.sampled) < TRIGRAM_SAMPLE_MIN_ROWS) return new Set();
  return new Set(rows.map((row) => row.trigram));
}
