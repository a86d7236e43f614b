import { PostgresAdapter, sql, type QueryExecutorProvider, type RawBuilder, type SelectQueryBuilder } from 'kysely';

export type Dialect = 'sqlite' | 'postgres';

/** Any Kysely instance or transaction, whatever its table types. */
type AnyDb = { getExecutor(): { readonly adapter: unknown } };

export function dialectOf(db: AnyDb): Dialect {
  return db.getExecutor().adapter instanceof PostgresAdapter ? 'postgres' : 'sqlite';
}

/**
 * A timestamp parameter where the statement alone cannot tell its type (the select list of an
 * INSERT … SELECT): PostgreSQL needs the cast; SQLite stores the ISO text as it is.
 */
export function timestampValue(db: AnyDb, iso: string): RawBuilder<unknown> {
  return dialectOf(db) === 'postgres' ? sql`cast(${iso} as timestamptz)` : sql`${iso}`;
}

/**
 * The query with its rows locked until the transaction ends (`FOR UPDATE`, `OF` the table named
 * when the query joins others) on PostgreSQL; SQLite runs one writer at a time, so there the
 * query is unchanged.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any row shape
export function lockedOnPostgres<Q extends SelectQueryBuilder<any, any, any>>(db: AnyDb, query: Q, of?: string): Q {
  if (dialectOf(db) !== 'postgres') return query;
  return (of === undefined ? query.forUpdate() : query.forUpdate(of as never)) as Q;
}

/**
 * A condition, always true, that makes a data-modifying CTE of PostgreSQL run after the CTE
 * `earlier` (which must return rows, or none): the sub-statements of one WITH run in no set
 * order, so two statements that update an affiliate's row and its link's could lock them in
 * either order, and two such transactions deadlock (issue 29: one a second under load, each
 * found only by the deadlock detector). Reading `earlier` forces it to complete first. Every
 * transaction locks an affiliate before its link, and both before a code and its coupon.
 */
export function lockOrderAfter(earlier: string): RawBuilder<unknown> {
  return sql`(select count(*) from ${sql.table(earlier)}) >= 0`;
}

/**
 * Makes transactions that name the same key take turns until they end: an advisory lock on
 * PostgreSQL (for a check and an insert with no row to lock, such as "the first user"); SQLite
 * runs one writer at a time already, so there it does nothing.
 */
export async function serializeOnKey(tx: AnyDb & QueryExecutorProvider, key: string): Promise<void> {
  if (dialectOf(tx) === 'postgres') await sql`select pg_advisory_xact_lock(hashtext(${key}))`.execute(tx);
}
