import { PostgresAdapter, sql, type RawBuilder } from 'kysely';

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
