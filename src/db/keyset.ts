import { sql, type SelectQueryBuilder } from 'kysely';

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

/** Adds the keyset conditions, order and limit (one extra row tells whether a next page exists). */
export function pageQuery<DB, TB extends keyof DB, O>(qb: SelectQueryBuilder<DB, TB, O>, table: string, page: PageRequest) {
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
    return q.orderBy(sql`${column} ${direction}, ${id} ${direction}`).limit(page.limit + 1);
  }
  if (page.after) q = q.where(sql<boolean>`(${createdAt}, ${id}) < (${page.after.createdAt}, ${page.after.id})`);
  return q.orderBy(sql`${createdAt} desc, ${id} desc`).limit(page.limit + 1);
}
