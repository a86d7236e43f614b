import { sql, type SelectQueryBuilder } from 'kysely';
import type { Db } from './transaction.ts';

// The dashboard's "contains" searches at scale (issue 31). A list's search is `lower(column)
// like '%text%'`, which no B-tree index serves. Each dialect has a substring index instead:
// PostgreSQL's pg_trgm GIN indexes serve that same `like` (its planner picks them when they
// pay), SQLite's FTS5 trigram tables serve a phrase query the repository drives the read from
// (sales: migration 2026-12-03T0600). Both count matches only up to SEARCH_COUNT_CAP, so a
// search matching most of a big program costs what a search matching ten thousand does.

/**
 * The shortest search the lists take: a trigram index finds nothing shorter, so a shorter text
 * would read every row of the program (seconds for a million sales).
 */
export const SEARCH_MIN_CHARACTERS = 3;

/** Past this many matches a search's totals say "more than" instead of adding them up. */
export const SEARCH_COUNT_CAP = 10_000;

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
