import { sql, type Kysely, type SelectQueryBuilder } from 'kysely';
import type { Database } from './schema.ts';
import { compiledQuery, filterShape, placeholderFilter, type ParamOf } from './compiled-query.ts';

// Lists are newest first and paged by keyset over (created_at, id), so a page costs the
// same at row 10 as at row 10 million.

export interface PageRequest {
  limit: number;
  /** The last row of the previous page; `value` is its `order.column` when the list is ordered by another column. */
  after?: { createdAt: string; id: string | number; value?: number | string };
  createdAfter?: string;
  /** The dashboard's other orders (oldest first, by amount…): keyset over (column, id) the same way. */
  order?: PageOrder;
}

export interface PageOrder {
  column: 'created_at' | 'total_earned' | 'commission' | 'total_commission_earned';
  direction: 'asc' | 'desc';
}

/**
 * Adds the keyset conditions, order and limit (one extra row tells whether a next page exists).
 * `rowsToFetch` is that limit plus one, or a compiled query's placeholder for it.
 */
export function pageQuery<DB, TB extends keyof DB, O>(qb: SelectQueryBuilder<DB, TB, O>, table: string, page: PageRequest, rowsToFetch: number = page.limit + 1) {
  const createdAt = sql.ref(`${table}.created_at`);
  const id = sql.ref(`${table}.id`);
  let q = qb;
  if (page.createdAfter !== undefined) q = q.where(sql<boolean>`${createdAt} > ${page.createdAfter}`);
  if (page.order) {
    const column = sql.ref(`${table}.${page.order.column}`);
    const direction = sql.raw(page.order.direction);
    const past = page.order.direction === 'asc' ? sql.raw('>') : sql.raw('<');
    const value = page.order.column === 'created_at' ? page.after?.createdAt : page.after?.value;
    if (page.after && value !== undefined) q = q.where(sql<boolean>`(${column}, ${id}) ${past} (${value}, ${page.after.id})`);
    return q.orderBy(sql`${column} ${direction}, ${id} ${direction}`).limit(rowsToFetch);
  }
  if (page.after) q = q.where(sql<boolean>`(${createdAt}, ${id}) < (${page.after.createdAt}, ${page.after.id})`);
  return q.orderBy(sql`${createdAt} desc, ${id} desc`).limit(rowsToFetch);
}

// The API's lists are newest first with two optional conditions (a cursor, createdAfter): four
// shapes of one compiled query (db/compiled-query.ts), the page's values bound per call.

/** Which optional conditions a newest-first page has: its compiled query's shape. */
export type NewestFirstShape = 'first' | 'after' | 'since' | 'since-after';

/** A newest-first page's values, as a compiled query binds them. */
export interface NewestFirstParams {
  fetch: number;
  afterCreatedAt?: string;
  afterId?: string | number;
  createdAfter?: string;
}

/** The shape and values of a newest-first page (callers check it has no other order). */
export function newestFirst(page: PageRequest): { shape: NewestFirstShape; params: NewestFirstParams } {
  const shape = page.createdAfter === undefined ? (page.after ? 'after' : 'first') : page.after ? 'since-after' : 'since';
  return {
    shape,
    params: { fetch: page.limit + 1, afterCreatedAt: page.after?.createdAt, afterId: page.after?.id, createdAfter: page.createdAfter },
  };
}

/** `pageQuery` for a compiled query of `shape`: placeholders where the page's values go. */
export function newestFirstPageQuery<DB, TB extends keyof DB, O>(
  qb: SelectQueryBuilder<DB, TB, O>,
  table: string,
  param: ParamOf<NewestFirstParams>,
  shape: NewestFirstShape | undefined,
) {
  const page: PageRequest = {
    limit: 0,
    after: shape === 'after' || shape === 'since-after' ? { createdAt: param('afterCreatedAt')!, id: param('afterId')! } : undefined,
    createdAfter: shape === 'since' || shape === 'since-after' ? param('createdAfter') : undefined,
  };
  return pageQuery(qb, table, page, param('fetch'));
}

/**
 * A program's list, newest first, as a compiled query: one shape per set of `fields` the filter
 * gives and per page shape. `select` builds the program's rows matching a filter (placeholders
 * stand in its values); `table` is the alias whose created_at and id order the page.
 */
export function compiledNewestFirstList<F extends object, R>(
  fields: readonly (keyof F & string)[],
  table: string,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any select of the program's rows
  select: (db: Kysely<Database>, programId: string, filter: F) => SelectQueryBuilder<any, any, R>,
): (db: Kysely<Database>, programId: string, filter: F, page: PageRequest) => Promise<R[]> {
  const query = compiledQuery<{ programId: string } & F & NewestFirstParams, R, string>((db, param, shape) => {
    const [filterFields, pageShape] = shape!.split(' ') as [string, NewestFirstShape];
    const filter = placeholderFilter(param as unknown as ParamOf<Required<F>>, filterFields);
    return newestFirstPageQuery(select(db, param('programId'), filter), table, param as unknown as ParamOf<NewestFirstParams>, pageShape);
  });
  return (db, programId, filter, page) => {
    const newest = newestFirst(page);
    return query.rows(db, { programId, ...filter, ...newest.params }, `${filterShape(filter, fields)} ${newest.shape}`);
  };
}
