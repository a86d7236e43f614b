import { sql, type Kysely, type SelectQueryBuilder } from 'kysely';
import type { Database } from './schema.ts';
import { toIso } from '../domain/clock.ts';
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

/** Where a page ends: its last row's keyset position, which the next page starts after (a cursor carries it, signed). */
export type PagePosition = NonNullable<PageRequest['after']>;

/** One page of a list, as services return it: its items (domain objects) and, when more follow, where the next page starts. */
export interface Page<T> {
  items: T[];
  next?: PagePosition;
}

/**
 * The page of the rows a page query fetched: one row more than `page.limit` says a next page
 * exists, and is cut. The next page starts after the last row kept (by its `order.column` too,
 * when the list is ordered by another column).
 */
export function pageOf<R extends { created_at: string | Date; id: string | number }>(rows: R[], page: PageRequest): Page<R> {
  if (rows.length <= page.limit) return { items: rows };
  const items = rows.slice(0, page.limit);
  const last = items[items.length - 1]!;
  const byValue = page.order !== undefined && page.order.column !== 'created_at' ? page.order.column : undefined;
  const createdAt = toIso(last.created_at);
  const next: PagePosition = byValue === undefined ? { createdAt, id: last.id } : { createdAt, id: last.id, value: Number((last as unknown as Record<string, unknown>)[byValue]) };
  return { items, next };
}

/** The same page with each item made another (a row into its domain object). */
export function mapPage<R, T>(page: Page<R>, toItem: (item: R) => T): Page<T> {
  return page.next === undefined ? { items: page.items.map(toItem) } : { items: page.items.map(toItem), next: page.next };
}

/** A page with nothing on it (a filter that names nobody). */
export const emptyPage = <T>(): Page<T> => ({ items: [] });

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
