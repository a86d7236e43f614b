import { sql, type SelectQueryBuilder } from 'kysely';

// Lists are newest first and paged by keyset over (created_at, id), so a page costs the
// same at row 10 as at row 10 million.

export interface PageRequest {
  limit: number;
  after?: { createdAt: string; id: string | number };
  createdAfter?: string;
}

/** Adds the keyset conditions, order and limit (one extra row tells whether a next page exists). */
export function pageQuery<DB, TB extends keyof DB, O>(qb: SelectQueryBuilder<DB, TB, O>, table: string, page: PageRequest) {
  const createdAt = sql.ref(`${table}.created_at`);
  const id = sql.ref(`${table}.id`);
  let q = qb;
  if (page.createdAfter !== undefined) q = q.where(sql<boolean>`${createdAt} > ${page.createdAfter}`);
  if (page.after) q = q.where(sql<boolean>`(${createdAt}, ${id}) < (${page.after.createdAt}, ${page.after.id})`);
  return q.orderBy(sql`${createdAt} desc, ${id} desc`).limit(page.limit + 1);
}
