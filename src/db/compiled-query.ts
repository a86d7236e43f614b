import type { CompiledQuery, Compilable, Insertable, InsertQueryBuilder, Kysely, QueryResult, RawBuilder } from 'kysely';
import type { Database } from './schema.ts';
import { dialectOf } from './dialect.ts';
import { directSqliteOf } from './direct-sqlite.ts';

// Queries on the request path, built and compiled once per shape. Kysely builds a query from
// immutable nodes and compiles it to SQL on every call, 30–50 µs each — more than SQLite takes
// to run a point query. A compiled query runs its builder once per dialect, with placeholders
// (`param('id')`) where values go, keeps the SQL, and binds each call's values into the
// parameter list. The SQL text stays the same, so SQLite's statement cache (database.ts) and
// PostgreSQL's named prepared statements (below) reuse the prepared statement too.
//
// Only what can vary per call may be a placeholder: a value list (`in (…)`), a null that the
// builder turns into `is null`, or a changing set of columns is another shape, so another
// compiled query.

/** Where a call's value goes in the compiled parameter list. */
class Placeholder {
  constructor(readonly name: string) {}
}

type AnyDb = Kysely<Database>;

/** The placeholder for parameter `name`, typed as the value it stands for. */
export type ParamOf<P> = <K extends keyof P & string>(name: K) => P[K];

interface Compiled {
  /** The compiled query, its parameters as built (placeholders among fixed values). */
  template: CompiledQuery;
  /** Each compiled parameter: a fixed value, or the placeholder of the call's value bound there. */
  slots: readonly unknown[];
}

// PostgreSQL: the SQL of compiled queries, each with its statement name. A named statement is
// parsed and planned once per connection (database.ts hands the name to pg); one name per text,
// as pg requires, and a bounded number of them, since they come from the code's shapes.
const statementNames = new Map<string, string>();

/** The prepared-statement name of a compiled query's SQL on PostgreSQL, if it is one. */
export function preparedStatementName(sqlText: string): string | undefined {
  return statementNames.get(sqlText);
}

export interface CompiledQueryOf<P, R, S extends string = never> {
  /** Runs the query with `params` bound; the rows. */
  rows(db: AnyDb, params: P, shape?: S): Promise<R[]>;
  /** Runs the query with `params` bound; the first row, if any. */
  first(db: AnyDb, params: P, shape?: S): Promise<R | undefined>;
  /** Runs the query with `params` bound; Kysely's whole result (numAffectedRows for writes). */
  run(db: AnyDb, params: P, shape?: S): Promise<QueryResult<R>>;
}

/**
 * A query whose builder runs once per dialect (and per `shape`, for a query with a few
 * variants: an optional condition, say). `build` receives a database to build on (never to
 * run on), `param`, which marks where each call's value goes, and the shape asked for.
 */
export function compiledQuery<P extends object, R, S extends string = never>(
  build: (db: AnyDb, param: ParamOf<P>, shape: S | undefined) => Compilable<R> | RawBuilder<R>,
): CompiledQueryOf<P, R, S> {
  const compiledByKey = new Map<string, Compiled>();
  const param = ((name: string) => new Placeholder(name)) as ParamOf<P>;

  const compiledFor = (db: AnyDb, shape: S | undefined): Compiled => {
    const dialect = dialectOf(db);
    const key = shape === undefined ? dialect : `${dialect} ${shape}`;
    let compiled = compiledByKey.get(key);
    if (compiled === undefined) {
      // A query builder compiles by itself; raw SQL (sql`…`) with the database it is for.
      const template = (build(db, param, shape) as { compile(db: AnyDb): CompiledQuery }).compile(db);
      compiled = { template, slots: template.parameters };
      compiledByKey.set(key, compiled);
      if (dialect === 'postgres' && !statementNames.has(template.sql)) statementNames.set(template.sql, `tandem_${statementNames.size + 1}`);
    }
    return compiled;
  };

  // Always a promise, failures included (a missing value, or SQLite's error on the direct path).
  const run = (db: AnyDb, params: P, shape?: S): Promise<QueryResult<R>> => {
    try {
      const { template, slots } = compiledFor(db, shape);
      const values = params as Record<string, unknown>;
      const parameters = slots.map((slot) => {
        if (!(slot instanceof Placeholder)) return slot;
        const value = values[slot.name];
        if (value === undefined) throw new Error(`compiled query: no value for parameter "${slot.name}"`);
        return value;
      });
      const direct = directSqliteOf(db)?.run(template.sql, parameters, db.isTransaction);
      if (direct !== undefined) return Promise.resolve(direct as QueryResult<R>);
      // The template's node and id go with the new parameters: no plugin reads them per query.
      return db.executeQuery<R>({ ...template, parameters } as CompiledQuery<R>);
    } catch (error) {
      return Promise.reject(error as Error);
    }
  };

  return {
    run,
    rows: (db, params, shape) => run(db, params, shape).then((result) => result.rows),
    first: (db, params, shape) => run(db, params, shape).then((result) => result.rows[0]),
  };
}

// Filters with optional fields (`{ id?, affiliateId?, … }`): one shape per set of fields given,
// each field a placeholder, so a repository keeps one builder for every combination.

/** The shape of `filter` among `fields`: the names of those it gives, comma-separated. */
export function filterShape<F extends object>(filter: F, fields: readonly (keyof F & string)[]): string {
  return fields.filter((field) => filter[field] !== undefined).join(',');
}

/** The filter of `shape` with a placeholder for each field it names. */
export function placeholderFilter<F extends object>(param: ParamOf<Required<F>>, shape: string | undefined): F {
  const filter: Record<string, unknown> = {};
  for (const field of shape ? shape.split(',') : []) filter[field] = param(field as keyof F & string);
  return filter as F;
}

/**
 * An insert into `table`, compiled once per set of columns given (the row's own keys, in its
 * order: each caller builds its rows the same way). `finish` adds what follows the values
 * (`returning`, `onConflict`).
 */
export function compiledInsert<T extends keyof Database & string, R = never>(
  table: T,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any insert of `table`
  finish: (insert: InsertQueryBuilder<Database, T, any>) => Compilable<R> = (insert) => insert as Compilable<R>,
): { run(db: AnyDb, row: Insertable<Database[T]>): Promise<QueryResult<R>>; first(db: AnyDb, row: Insertable<Database[T]>): Promise<R | undefined> } {
  const query = compiledQuery<Record<string, unknown>, R, string>((db, param, shape) => {
    const placeholders: Record<string, unknown> = {};
    for (const column of shape!.split(',')) placeholders[column] = param(column);
    return finish(db.insertInto(table).values(placeholders as never));
  });
  const columnsOf = (row: object) => Object.keys(row).filter((column) => (row as Record<string, unknown>)[column] !== undefined).join(',');
  return {
    run: (db, row) => query.run(db, row as Record<string, unknown>, columnsOf(row)),
    first: (db, row) => query.first(db, row as Record<string, unknown>, columnsOf(row)),
  };
}
